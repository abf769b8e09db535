#pragma once
// Next-token choice, split in two halves so that a device can choose on the
// device and still pick exactly the token the CPU would:
//  - the host half, Sampler: one seeded generator per session (side-by-side
//    sessions get the same seed), drawing one uniform number per sampled token;
//  - the backend half, choose_token(): greedy (ties to the lowest id, as
//    llama2.c) or temperature + top-p sampling with that number.
#include <cstdint>
#include <random>
#include <span>

namespace h2o {

struct SamplingConfig {
  float temperature = 0.0f;  // 0: greedy
  float top_p = 1.0f;
  uint64_t seed = 42;
  bool greedy() const { return temperature <= 0.0f; }
};

// What a backend needs to choose the next token from a row of logits.
struct TokenChoice {
  SamplingConfig sampling;
  double uniform = 0;  // in [0, 1), from Sampler::draw(); unused when greedy
};

class Sampler {
 public:
  explicit Sampler(const SamplingConfig& config) : config_(config), rng_(config.seed) {}
  // The next choice: the number comes from the generator unless greedy (which draws none).
  TokenChoice next();
  const SamplingConfig& config() const { return config_; }

 private:
  SamplingConfig config_;
  std::mt19937_64 rng_;
};

// The token `choice` picks from `logits`.
int choose_token(std::span<const float> logits, const TokenChoice& choice);

int argmax(std::span<const float> logits);
// log-softmax of one row into `out`, in double.
void log_softmax(std::span<const float> logits, std::span<double> out);

}  // namespace h2o
