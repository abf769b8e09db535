// device.h on the CUDA runtime. Compiled by the host compiler against
// cuda_runtime.h; every failing call becomes one line naming the device, the
// call and the CUDA error.
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "kernels/device.h"

namespace h2o::gpu {
namespace {

std::mutex g_mutex;
std::string g_label = "cuda device";  // until open_device() names it

cudaStream_t raw(Stream s) { return reinterpret_cast<cudaStream_t>(s); }
cudaEvent_t raw(Event e) { return reinterpret_cast<cudaEvent_t>(e); }
cudaGraphExec_t raw(Graph g) { return reinterpret_cast<cudaGraphExec_t>(g); }

std::string describe(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

void check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a sticky-free error so the next call reports its own
  throw Error(device_label() + ": " + call + ": " + describe(e));
}

}  // namespace

DeviceInfo open_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    throw Error("no CUDA device found (cudaGetDeviceCount: " + describe(e == cudaSuccess ? cudaErrorNoDevice : e) + ")");
  if (e == cudaErrorInsufficientDriver)  // also what the runtime says where there is no driver at all
    throw Error("no CUDA device found: no usable NVIDIA driver (cudaGetDeviceCount: " + describe(e) + ")");
  if (e != cudaSuccess) throw Error("no usable CUDA device: cudaGetDeviceCount: " + describe(e));
  check(cudaSetDevice(0), "cudaSetDevice(0)");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  DeviceInfo info;
  info.name = prop.name;
  info.ordinal = 0;
  info.major = prop.major;
  info.minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.memory_bytes = int64_t(prop.totalGlobalMem);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_label = "cuda device 0 (" + info.name + ")";
  }
  return info;
}

std::string device_label() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_label;
}

void* alloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfDeviceMemory(device_label() + ": out of device memory allocating " + std::to_string(bytes >> 20) +
                            " MiB");
  }
  check(e, "cudaMalloc");
  return p;
}

void release(void* p) noexcept {
  if (p) (void)cudaFree(p);
}

void* alloc_pinned(size_t bytes) {
  void* p = nullptr;
  check(cudaMallocHost(&p, bytes), "cudaMallocHost");
  return p;
}

void release_pinned(void* p) noexcept {
  if (p) (void)cudaFreeHost(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, raw(s)), "cudaMemcpyAsync (to device)");
}

void copy_to_host(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, raw(s)), "cudaMemcpyAsync (to host)");
}

void copy_on_device(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, raw(s)), "cudaMemcpyAsync (on device)");
}

void copy_rows_on_device(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t height,
                         Stream s) {
  if (width && height)
    check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToDevice, raw(s)),
          "cudaMemcpy2DAsync");
}

void fill_on_device(void* dst, int byte, size_t bytes, Stream s) {
  if (bytes) check(cudaMemsetAsync(dst, byte, bytes, raw(s)), "cudaMemsetAsync");
}

Stream create_stream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return reinterpret_cast<Stream>(s);
}

void destroy_stream(Stream s) noexcept {
  if (s) (void)cudaStreamDestroy(raw(s));
}

void synchronize(Stream s) { check(cudaStreamSynchronize(raw(s)), "cudaStreamSynchronize"); }

Event create_event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return reinterpret_cast<Event>(e);
}

void destroy_event(Event e) noexcept {
  if (e) (void)cudaEventDestroy(raw(e));
}

void record(Event e, Stream s) { check(cudaEventRecord(raw(e), raw(s)), "cudaEventRecord"); }

float elapsed_ms(Event start, Event end) {
  float ms = 0;
  check(cudaEventSynchronize(raw(end)), "cudaEventSynchronize");
  check(cudaEventElapsedTime(&ms, raw(start), raw(end)), "cudaEventElapsedTime");
  return ms;
}

void begin_capture(Stream s) {
  check(cudaStreamBeginCapture(raw(s), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}

Graph end_capture(Stream s) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(raw(s), &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  check(e, "cudaGraphInstantiate");
  return reinterpret_cast<Graph>(exec);
}

void launch_graph(Graph g, Stream s) { check(cudaGraphLaunch(raw(g), raw(s)), "cudaGraphLaunch"); }

void destroy_graph(Graph g) noexcept {
  if (g) (void)cudaGraphExecDestroy(raw(g));
}

void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(device_label() + ": launch of " + kernel + ": " + describe(e));
}

}  // namespace h2o::gpu
