#include "core/backends/make_backend.h"

#include "core/backends/cuda_module.h"
#include "core/base/error.h"
#include "core/base/system_limits.h"
#include "core/cpu/cpu_backend.h"
#include "kernels/simt/cuda_sim.h"

namespace h2o {

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {"cpu", "cuda", "cuda-sim"};
  return names;
}

std::string backend_choices() {
  std::string out;
  for (const std::string& name : backend_names()) out += (out.empty() ? "" : "|") + name;
  return out;
}

std::unique_ptr<Backend> make_backend(std::shared_ptr<const Model> model, const BackendOptions& options) {
  if (options.threads < 0) fail("--threads", "must be >= 0 (0: all cores), got " + std::to_string(options.threads));
  if (options.threads > max_threads())
    fail("--threads", std::to_string(options.threads) + " is more than " + std::to_string(kThreadsPerCore) +
                          " per CPU this process may use (" + std::to_string(hardware_threads()) +
                          "): at most " + std::to_string(max_threads()));
  if (options.kv_limit_bytes < 0) fail("--kv-limit", "must be >= 0 MiB (0: no limit)");
  if (options.kind == "cpu") {
    // The CPU multiplies quantised matrices in their blocks and the rest in f32: native and f32 alike.
    if (!options.precision.empty() && options.precision != "f32" && options.precision != "native")
      fail("--precision", "the CPU backend computes in f32 only");
    return make_cpu_backend(std::move(model), options.threads, options.kv_limit_bytes);
  }
  if (options.kind == "cuda") return cuda_module().make_backend(std::move(model), options);
  if (options.kind == "cuda-sim") return make_cuda_sim_backend(std::move(model), options);
  fail("--backend", "unknown backend '" + options.kind + "' (expected " + backend_choices() + ")");
}

BackendChoice make_backend_or_cpu(const std::shared_ptr<const Model>& model, const BackendOptions& options) {
  BackendChoice choice;
  try {
    choice.backend = make_backend(model, options);
    return choice;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    if (options.kind == "cpu") throw;
    choice.error = e.what();
  }
  // The reason without the flag and device it names, and without the driver's details in brackets.
  std::string_view reason = choice.error;
  for (const std::string& prefix : {std::string("--backend:"), options.kind + ":"})
    if (reason.rfind(prefix, 0) == 0) {
      reason.remove_prefix(prefix.size());
      while (!reason.empty() && reason.front() == ' ') reason.remove_prefix(1);
    }
  if (const size_t cut = reason.find(" ("); cut != std::string_view::npos && cut > 0) reason = reason.substr(0, cut);
  choice.reason = reason;
  BackendOptions cpu = options;
  cpu.kind = "cpu";
  cpu.precision.clear();
  choice.backend = make_backend(model, cpu);
  return choice;
}

}  // namespace h2o
