// Compiled with H2O_SIMT: kernels/cuda_backend.h declares the emulated
// build's make_cuda_backend (h2o::sim), which is what this hands out.
#include "kernels/simt/cuda_sim.h"

#include <string>

#include "core/base/error.h"
#include "kernels/cuda_backend.h"

namespace h2o {

std::unique_ptr<Backend> make_cuda_sim_backend(std::shared_ptr<const Model> model, const BackendOptions& options) {
  // Fibers switch on the thread that launches: more CPU threads would change
  // nothing but the user's expectation of speed.
  if (options.threads > 1)
    fail("--threads", "cuda-sim emulates the device on one CPU thread; give 1 or leave --threads out (got " +
                          std::to_string(options.threads) + ")");
  return sim::make_cuda_backend(std::move(model), options);
}

}  // namespace h2o
