#pragma once
// The CUDA backend (kernels/README.md): h2o::Backend on one GPU, every
// session of a step in one pass, decode steps replayed from CUDA graphs.
// The same sources also build against the SIMT emulation (kernels/simt), where
// "the device" is host memory: CI runs the whole backend that way.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/backend.h"
#include "kernels/namespaces.h"

namespace H2O_CUDA_NS {

// Choices below BackendOptions, for tests and the benchmark.
struct CudaTuning {
  int threads = 128;         // block size of every kernel (a multiple of 32, at most 1024)
  bool graphs = true;        // replay decode steps from captured CUDA graphs
  int graph_capacity = 16;   // graphs kept (least recently used dropped)
  bool timing = false;       // time each forward's device work with CUDA events (cuda_last_forward_ms)
  // Projections of up to this many rows run the matvec kernel, more run
  // cuBLAS (kernels/blas.h); 0 to 8. 0: cuBLAS for all (a comparison; in the
  // SIMT emulation the CPU matmul that stands in for cuBLAS).
  int matvec_rows = 8;
  // At native precision, block-format weights multiply 8-bit inputs
  // (matvec_int8, int8_activations.h; not exact: ~0.01 nats, tests/cuda
  // Int8Path). false: f32 inputs, each weight dequantised to the CPU's value
  // (matvec_quant: the parity tests' path).
  bool int8_activations = true;
};

// Throws Error with one line where there is no usable device ("--backend:
// cuda: no CUDA device found (...)", or the driver's error), for a model
// shape the kernels do not serve, or a precision other than f32, f16, bf16,
// native or "" (the default: native for a file with quantised matrices, else
// f32; kernels/weight_convert.h says what each keeps on the device).
// The first form takes CudaTuning{}, with matvec_rows from the environment
// variable H2O_CUDA_MATVEC_ROWS where set (0 to 8: an A/B of cuBLAS and the
// matvec kernel in one run of h2o-bench or h2o-cli), and int8_activations
// from H2O_CUDA_INT8 (0 or 1: an A/B of native's two paths).
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, const BackendOptions& options);
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, const BackendOptions& options,
                                           const CudaTuning& tuning);

// ---- for h2o-bench (and the tests): what only the CUDA code can measure ----

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes
// written: `repeats` timed copies of `bytes` between two buffers (CUDA events
// around each, after two warm-up copies), the median. The roofline a decode
// step is read against. Throws Error where there is no device.
double cuda_copy_bandwidth_gbs(int64_t bytes = int64_t(1) << 30, int repeats = 20);

// Device time of the last forward() of a CUDA backend made with
// CudaTuning::timing (CUDA events around all its device work: inputs up,
// every kernel, outputs down), in ms; NaN otherwise. Time a decode step with
// it: feed_one(), then read this.
double cuda_last_forward_ms(const Backend& backend);

struct CudaBackendStats {
  int64_t forwards = 0;
  int64_t graph_replays = 0;   // forwards run from a graph captured earlier
  int64_t graph_captures = 0;  // forwards captured (and then run) as a new graph
  std::string device;          // the device's name
  int64_t weight_device_bytes = 0;  // every byte the weights hold on the device (weight_bytes() is what a pass reads)
};
// Zeros (and an empty device) if `backend` is not a CUDA backend.
CudaBackendStats cuda_backend_stats(const Backend& backend);

// Device time per operation (h2o-bench --op-times). While on, every pass runs
// eagerly (no graph replays) with a CUDA event after each operation, and the
// totals grow from zero; switching on again resets them. Returns false (and
// does nothing) if `backend` is not a CUDA backend.
struct CudaOpTime {
  std::string op;        // "gemm q|k|v", "attention", ...
  int64_t launches = 0;  // over every timed pass (per layer: one a layer)
  double ms = 0;         // device time over every timed pass
  int64_t bytes = 0;     // the fewest bytes it must move over every timed pass (0: not modelled)
};
bool cuda_set_op_timing(Backend& backend, bool on);
std::vector<CudaOpTime> cuda_op_times(const Backend& backend);

}  // namespace H2O_CUDA_NS
