#pragma once
// The backends this build has, chosen by name. Its own library (h2o_backends)
// so that it sees the CUDA backend when kernels/ is built, while core/runtime
// and core/cpu know nothing of CUDA.
#include <memory>

#include "core/runtime/backend.h"

namespace h2o {

// The backend named in `options` for a model; throws Error if it is not
// available in this build or on this machine.
std::unique_ptr<Backend> make_backend(std::shared_ptr<const Model> model, const BackendOptions& options);

}  // namespace h2o
