// h2o-bench-cpu: CPU decode throughput per model shape and cache policy, on
// synthetic weights (a decode step costs the same whatever the weights hold).
// Prints a Markdown table; a benchmark, never a timed test.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/base/error.h"
#include "core/cpu/cpu_backend.h"

using namespace h2o;

int main(int argc, char** argv) {
  CLI::App app{"CPU decode benchmark: tokens/s per shape and policy (synthetic weights)"};
  std::string shapes = "stories15M,stories110M", policies = "full,streaming,h2o";
  int tokens = 256, threads = 2, budget = 64, sinks = 4, repeats = 3;
  app.add_option("--shapes", shapes, "synthetic shapes, comma-separated");
  app.add_option("--policies", policies, "comma-separated, any of: " + policy_names());
  app.add_option("--tokens", tokens, "decode steps per run (one token each, from BOS)");
  app.add_option("--threads", threads, "CPU threads");
  app.add_option("--budget", budget, "tokens per KV head for streaming/h2o");
  app.add_option("--sinks", sinks, "attention sinks");
  app.add_option("--repeats", repeats, "runs per cell; the median is reported");
  CLI11_PARSE(app, argc, argv);

  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
      if (!x.empty()) out.push_back(x);
    return out;
  };
  try {
    std::cout << "| shape | params | policy | threads | tokens | decode tok/s (median of " << repeats
              << ") | ms/token | KV live at end |\n|---|---:|---|---:|---:|---:|---:|---:|\n";
    for (const auto& shape : split(shapes)) {
      auto model = make_synthetic({shape, 1234, DType::F32, 0, 0});
      auto backend = make_cpu_backend(model, threads);
      for (const auto& name : split(policies)) {
        PolicySettings settings;
        settings.budget = budget;
        settings.given["sinks"] = sinks;
        const PolicyConfig policy = make_policy(name, settings);
        std::vector<double> rates;
        int64_t live = 0;
        for (int rep = 0; rep < repeats; ++rep) {
          auto cache = backend->new_cache(policy);
          const TokenChoice greedy;
          int token = model->config.bos_id;
          const auto t0 = std::chrono::steady_clock::now();
          for (int t = 0; t < tokens; ++t) token = feed_one(*backend, *cache, token, greedy);
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          rates.push_back(tokens / s);
          live = cache->live_bytes();
        }
        std::sort(rates.begin(), rates.end());
        const double rate = rates[rates.size() / 2];
        std::cout << "| " << shape << " | " << std::fixed << std::setprecision(1)
                  << model->config.parameter_count() / 1e6 << "M | " << policy.describe() << " | " << threads << " | "
                  << tokens << " | " << std::setprecision(0) << rate << " | " << std::setprecision(2)
                  << 1000.0 / rate << " | " << std::setprecision(2) << live / 1048576.0 << " MiB |\n"
                  << std::flush;
      }
    }
  } catch (const Error& e) {
    std::cerr << "h2o-bench-cpu: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
