#pragma once
// The thin host API the CUDA backend uses for the device: memory, copies,
// one stream, events, graphs, and launch checks. Two implementations:
//  - kernels/device_cuda.cpp: the CUDA runtime (the real backend);
//  - kernels/simt/device_emu.cpp: host memory and the SIMT emulation, so that
//    the whole backend (host orchestration and kernels) also runs in CI.
// Every call that fails throws h2o::Error with one line naming the device and
// the CUDA error; an allocation the device cannot satisfy throws
// OutOfDeviceMemory, which a cache turns into a SessionFailure.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "kernels/namespaces.h"

namespace H2O_GPU_NS {

struct StreamImpl;
struct EventImpl;
struct GraphImpl;
using Stream = StreamImpl*;
using Event = EventImpl*;
using Graph = GraphImpl*;  // an instantiated, launchable graph

struct DeviceInfo {
  std::string name;          // "NVIDIA H100 80GB HBM3", "SIMT emulation (host memory)"
  int ordinal = 0;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  bool emulated = false;
};

class OutOfDeviceMemory : public Error {
 public:
  using Error::Error;
};

// Selects the first device and returns what it is. Throws Error("no CUDA
// device found (...)") where there is none, or the driver's error.
DeviceInfo open_device();
// "cuda device 0 (NVIDIA H100 80GB HBM3)": how error messages name it.
std::string device_label();

void* alloc(size_t bytes);        // device memory; throws OutOfDeviceMemory
void release(void* p) noexcept;   // null is fine
void* alloc_pinned(size_t bytes); // page-locked host memory, for the step's inputs and outputs
void release_pinned(void* p) noexcept;

// Stream-ordered copies and fills (asynchronous where the device allows).
void copy_to_device(void* dst, const void* src, size_t bytes, Stream s);
void copy_to_host(void* dst, const void* src, size_t bytes, Stream s);
void copy_on_device(void* dst, const void* src, size_t bytes, Stream s);
// `height` rows of `width` bytes, each `src_pitch` / `dst_pitch` apart.
void copy_rows_on_device(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t height,
                         Stream s);
void fill_on_device(void* dst, int byte, size_t bytes, Stream s);

Stream create_stream();
void destroy_stream(Stream s) noexcept;
void synchronize(Stream s);

Event create_event();
void destroy_event(Event e) noexcept;
void record(Event e, Stream s);
float elapsed_ms(Event start, Event end);  // both recorded and complete

// Stream capture: the work enqueued on `s` between begin and end becomes a
// graph, launched later with launch_graph (a replay reads device memory as
// it is then; the launches' own arguments are fixed at capture).
void begin_capture(Stream s);
Graph end_capture(Stream s);
void launch_graph(Graph g, Stream s);
void destroy_graph(Graph g) noexcept;

// After a kernel launch: throws Error naming the kernel if the launch failed.
void check_launch(const char* kernel);

}  // namespace H2O_GPU_NS
