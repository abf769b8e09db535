#pragma once
// Next-token choice: greedy (ties to the lowest id, as llama2.c) or sampling
// with temperature and top-p from a seeded generator. Each session owns one,
// and side-by-side sessions are given the same seed.
#include <cstdint>
#include <random>
#include <span>

namespace h2o {

struct SamplingConfig {
  float temperature = 0.0f;  // 0: greedy
  float top_p = 1.0f;
  uint64_t seed = 42;
};

class Sampler {
 public:
  explicit Sampler(const SamplingConfig& config);
  int sample(std::span<const float> logits);
  const SamplingConfig& config() const { return config_; }

 private:
  SamplingConfig config_;
  std::mt19937_64 rng_;
};

int argmax(std::span<const float> logits);
// log-softmax of one row into `out`.
void log_softmax(std::span<const float> logits, std::span<double> out);

}  // namespace h2o
