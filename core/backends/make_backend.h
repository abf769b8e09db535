#pragma once
// The backends this build has, chosen by name. Its own library (h2o_backends)
// so that it sees the CUDA backend when kernels/ is built, while core/runtime
// and core/cpu know nothing of CUDA.
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/backend.h"

namespace h2o {

// Every backend by its name, as every front end offers them (h2o-cli,
// h2o-bench, h2o-studio's flag and its Device menu): "cpu", "cuda" and
// "cuda-sim" (the CUDA backend's code through the SIMT emulation).
const std::vector<std::string>& backend_names();
// "cpu|cuda|cuda-sim", for a flag's help.
std::string backend_choices();

// The backend named in `options` for a model; throws Error if it is not
// available in this build or on this machine.
std::unique_ptr<Backend> make_backend(std::shared_ptr<const Model> model, const BackendOptions& options);

// The app's choice: the backend asked for, or the CPU's when that device
// cannot start here (no CUDA in this build, no GPU), so that the app streams
// on rather than shows nothing — and says so. A CPU that cannot start throws
// as make_backend does.
struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string error;   // why the device asked for did not start ("" : it did), whole
  std::string reason;  // the same in short, for a banner: "no CUDA-capable device is detected"
};
BackendChoice make_backend_or_cpu(const std::shared_ptr<const Model>& model, const BackendOptions& options);

}  // namespace h2o
