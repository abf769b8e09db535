#include "core/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace h2o {

int argmax(std::span<const float> logits) {
  int best = 0;
  for (int i = 1; i < int(logits.size()); ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

void log_softmax(std::span<const float> logits, std::span<double> out) {
  double max = logits[0];
  for (float l : logits) max = std::max(max, double(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max);
  const double log_z = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_z;
}

TokenChoice Sampler::next() {
  TokenChoice choice{config_, 0.0};
  // What std::uniform_real_distribution<double> draws from the generator,
  // scaled to the kept mass by choose_token: the same bits either way.
  if (!config_.greedy()) choice.uniform = std::generate_canonical<double, std::numeric_limits<double>::digits>(rng_);
  return choice;
}

int choose_token(std::span<const float> logits, const TokenChoice& choice) {
  const SamplingConfig& config = choice.sampling;
  if (config.greedy()) return argmax(logits);
  const int n = int(logits.size());
  std::vector<double> p(static_cast<size_t>(n));
  double max = logits[0];
  for (float l : logits) max = std::max(max, double(l));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += p[size_t(i)] = std::exp((double(logits[size_t(i)]) - max) / config.temperature);
  for (double& x : p) x /= sum;

  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  int keep = n;
  if (config.top_p < 1.0f) {
    std::sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] != p[size_t(b)] ? p[size_t(a)] > p[size_t(b)] : a < b; });
    double cum = 0;
    keep = 0;
    while (keep < n && cum < config.top_p) cum += p[size_t(order[size_t(keep++)])];
  }
  double mass = 0;
  for (int i = 0; i < keep; ++i) mass += p[size_t(order[size_t(i)])];
  const double u = choice.uniform * mass;
  double cum = 0;
  for (int i = 0; i < keep; ++i) {
    cum += p[size_t(order[size_t(i)])];
    if (u < cum) return order[size_t(i)];
  }
  return order[size_t(keep - 1)];
}

}  // namespace h2o
