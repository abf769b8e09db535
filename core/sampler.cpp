#include "sampler.h"

#include <algorithm>
#include <cmath>
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

Sampler::Sampler(const SamplingConfig& config) : config_(config), rng_(config.seed) {}

int Sampler::sample(std::span<const float> logits) {
  if (config_.temperature <= 0.0f) return argmax(logits);
  const int n = int(logits.size());
  std::vector<double> p(n);
  double max = logits[0];
  for (float l : logits) max = std::max(max, double(l));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += p[i] = std::exp((double(logits[i]) - max) / config_.temperature);
  for (double& x : p) x /= sum;

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  int keep = n;
  if (config_.top_p < 1.0f) {
    std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
    double cum = 0;
    keep = 0;
    while (keep < n && cum < config_.top_p) cum += p[order[keep++]];
  }
  double mass = 0;
  for (int i = 0; i < keep; ++i) mass += p[order[i]];
  const double u = std::uniform_real_distribution<double>(0.0, mass)(rng_);
  double cum = 0;
  for (int i = 0; i < keep; ++i) {
    cum += p[order[i]];
    if (u < cum) return order[i];
  }
  return order[keep - 1];
}

}  // namespace h2o
