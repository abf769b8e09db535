// device.h on host memory, for the SIMT emulation: "device" memory is
// malloc'd (so AddressSanitizer sees a kernel's out-of-bounds access), a
// stream runs its work at once in order, and a capture records the work as
// closures that a graph launch replays — the same contract as CUDA graphs: a
// replay reads memory as it is then, with the arguments fixed at capture.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/device.h"
#include "kernels/simt/device_emu.h"
#include "kernels/simt/simt.h"

namespace H2O_GPU_NS {

struct StreamImpl {
  bool capturing = false;
  std::vector<std::function<void()>> recorded;
};
struct EventImpl {
  std::chrono::steady_clock::time_point at;
};
struct GraphImpl {
  std::vector<std::function<void()>> work;
};

namespace {

std::mutex g_mutex;
std::map<void*, size_t> g_sizes;
int64_t g_allocated = 0, g_limit = 0;

void enqueue_on(Stream s, std::function<void()> work) {
  if (!s) throw Error("simt device: work enqueued on a null stream");
  if (s->capturing) s->recorded.push_back(std::move(work));
  else work();
}

}  // namespace

namespace emu {
void set_memory_limit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_limit = bytes;
}
int64_t allocated_bytes() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_allocated;
}
}  // namespace emu

DeviceInfo open_device() {
  DeviceInfo info;
  info.name = "SIMT emulation (host memory)";
  // A fixed count, as an H100 has 132: the attention grid is sized by it, so
  // the emulated steps split their keys over several blocks as a GPU's do.
  info.multiprocessors = 16;
  info.memory_bytes = g_limit;
  info.emulated = true;
  return info;
}

std::string device_label() { return "simt emulation"; }

void* alloc(size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_limit > 0 && g_allocated + int64_t(bytes) > g_limit)
    throw OutOfDeviceMemory(device_label() + ": out of device memory allocating " + std::to_string(bytes) + " bytes");
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) throw OutOfDeviceMemory(device_label() + ": out of memory");
  // Poisoned like fresh device memory: never zero, so an unwritten output shows.
  std::memset(p, 0x7f, bytes);
  g_sizes[p] = bytes;
  g_allocated += int64_t(bytes);
  return p;
}

void release(void* p) noexcept {
  if (!p) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_sizes.find(p);
  if (it != g_sizes.end()) {
    g_allocated -= int64_t(it->second);
    g_sizes.erase(it);
  }
  std::free(p);
}

void* alloc_pinned(size_t bytes) {
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) throw Error(device_label() + ": out of host memory");
  return p;
}

void release_pinned(void* p) noexcept { std::free(p); }

// (Zero-byte copies are skipped as cudaMemcpyAsync allows them: memcpy may not see a null pointer.)
void copy_to_device(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) enqueue_on(s, [=] { std::memcpy(dst, src, bytes); });
}
void copy_to_host(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) enqueue_on(s, [=] { std::memcpy(dst, src, bytes); });
}
void copy_on_device(void* dst, const void* src, size_t bytes, Stream s) {
  if (bytes) enqueue_on(s, [=] { std::memmove(dst, src, bytes); });
}
void copy_rows_on_device(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t height,
                         Stream s) {
  if (!width || !height) return;
  enqueue_on(s, [=] {
    for (size_t r = 0; r < height; ++r)
      std::memmove(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
  });
}
void fill_on_device(void* dst, int byte, size_t bytes, Stream s) {
  if (bytes) enqueue_on(s, [=] { std::memset(dst, byte, bytes); });
}

Stream create_stream() { return new StreamImpl; }
void destroy_stream(Stream s) noexcept { delete s; }
void synchronize(Stream s) {
  if (s && s->capturing) throw Error(device_label() + ": synchronize during a capture");
}

Event create_event() { return new EventImpl; }
void destroy_event(Event e) noexcept { delete e; }
void record(Event e, Stream s) {
  enqueue_on(s, [e] { e->at = std::chrono::steady_clock::now(); });
}
float elapsed_ms(Event start, Event end) {
  return std::chrono::duration<float, std::milli>(end->at - start->at).count();
}

void begin_capture(Stream s) {
  if (s->capturing) throw Error(device_label() + ": begin_capture on a stream already capturing");
  s->capturing = true;
  s->recorded.clear();
}

Graph end_capture(Stream s) {
  if (!s->capturing) throw Error(device_label() + ": end_capture without begin_capture");
  auto g = std::make_unique<GraphImpl>();
  g->work = std::move(s->recorded);
  s->recorded.clear();
  s->capturing = false;
  return g.release();
}

void launch_graph(Graph g, Stream s) {
  enqueue_on(s, [g] {
    for (const auto& w : g->work) w();
  });
}

void destroy_graph(Graph g) noexcept { delete g; }

void check_launch(const char*) {}

}  // namespace H2O_GPU_NS

namespace simt {
void enqueue(void* stream, std::function<void()> work) {
  h2o::gpu::enqueue_on(static_cast<h2o::gpu::Stream>(stream), std::move(work));
}
}  // namespace simt
