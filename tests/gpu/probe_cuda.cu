// GPU machine probe, independent of the project's code (tests/gpu/run_on_device.sh probe):
//   1. device properties;
//   2. a vector add of random floats, checked element by element on the host
//      (output poisoned first, so an unwritten element is caught);
//   3. the device-to-device copy bandwidth: cudaMemcpy D2D and a plain
//      16-byte-per-thread copy kernel, each on buffers of --mib MiB, timed with
//      CUDA events after warm-up, median of --reps; GB/s counts bytes read plus
//      bytes written (2 x buffer size), as the library's METHOD.md says.
// Build: nvcc -O2 -arch=sm_90 -o probe_cuda probe_cuda.cu
// Prints "key: value" lines and one Markdown table; exits non-zero on any error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t err_ = (call);                                                                   \
    if (err_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, \
                   __LINE__, cudaGetErrorString(err_));                                          \
      std::exit(2);                                                                              \
    }                                                                                            \
  } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    c[i] = a[i] + b[i];
}

__global__ void copy16(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

int main(int argc, char** argv) {
  size_t mib = 1024;  // buffer size for the copies
  int reps = 20, warmup = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mib")) mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "usage: %s [--mib N] [--reps N] [--warmup N]\n", argv[0]); return 2; }
  }
  if (mib == 0 || reps < 1 || warmup < 0) { std::fprintf(stderr, "bad arguments\n"); return 2; }

  // 1. The device, as the runtime reports it.
  int dev = 0, count = 0;
  CHECK(cudaGetDeviceCount(&count));
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, dev));
  int runtime = 0, driver = 0, clock_khz = 0, mem_clock_khz = 0, bus_width = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  CHECK(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev));
  CHECK(cudaDeviceGetAttribute(&bus_width, cudaDevAttrGlobalMemoryBusWidth, dev));
  std::printf("devices: %d\n", count);
  std::printf("device: %s\n", p.name);
  std::printf("compute capability: %d.%d\n", p.major, p.minor);
  std::printf("multiprocessors: %d\n", p.multiProcessorCount);
  std::printf("global memory MiB: %zu\n", size_t(p.totalGlobalMem >> 20));
  std::printf("L2 MiB: %.1f\n", p.l2CacheSize / 1048576.0);
  std::printf("shared memory per block optin KiB: %zu\n", size_t(p.sharedMemPerBlockOptin >> 10));
  std::printf("max SM clock MHz: %d\n", clock_khz / 1000);
  std::printf("max memory clock MHz: %d, bus width bits: %d\n", mem_clock_khz / 1000, bus_width);
  std::printf("runtime version: %d, driver version: %d\n", runtime, driver);

  // 2. Vector add on random data, checked on the host.
  const size_t n = size_t(1) << 24;
  std::vector<float> a(n), b(n), c(n);
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (size_t i = 0; i < n; ++i) { a[i] = dist(rng); b[i] = dist(rng); }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, n * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0xFF, n * sizeof(float)));  // poison: NaN everywhere until written
  vector_add<<<4 * p.multiProcessorCount, 256>>>(da, db, dc, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!(c[i] == a[i] + b[i])) ++bad;  // float add is exact-reproducible; NaN fails too
  std::printf("vector add: %zu elements, %zu wrong: %s\n", n, bad, bad ? "FAIL" : "ok");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));

  // 3. Copy bandwidth, device to device.
  const size_t bytes = mib << 20;
  void *src, *dst;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  {
    // Random bytes, not zeros: METHOD.md warns that zeros can run faster than real data.
    std::vector<uint32_t> chunk(size_t(1) << 22);
    for (auto& x : chunk) x = rng();
    const size_t cb = chunk.size() * sizeof(uint32_t);
    for (size_t off = 0; off < bytes; off += cb)
      CHECK(cudaMemcpy(static_cast<char*>(src) + off, chunk.data(), std::min(cb, bytes - off), cudaMemcpyHostToDevice));
  }
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  auto time_it = [&](auto&& body) {
    for (int i = 0; i < warmup; ++i) body();
    CHECK(cudaDeviceSynchronize());
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
      CHECK(cudaEventRecord(t0));
      body();
      CHECK(cudaEventRecord(t1));
      CHECK(cudaEventSynchronize(t1));
      float m = 0;
      CHECK(cudaEventElapsedTime(&m, t0, t1));
      ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    return std::vector<double>{median(ms), ms.front(), ms.back()};
  };
  const auto memcpy_ms = time_it([&] { CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
  const size_t n16 = bytes / 16;
  const auto kernel_ms = time_it([&] {
    copy16<<<8 * p.multiProcessorCount, 512>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n16);
    CHECK(cudaGetLastError());
  });
  // The copy must have copied: compare a sample of dst with src on the host.
  {
    std::vector<uint32_t> hs(1 << 20), hd(1 << 20);
    const size_t off = bytes - hs.size() * 4;
    CHECK(cudaMemcpy(hs.data(), static_cast<char*>(src) + off, hs.size() * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hd.data(), static_cast<char*>(dst) + off, hd.size() * 4, cudaMemcpyDeviceToHost));
    if (hs != hd) { std::fprintf(stderr, "copy check failed\n"); return 3; }
  }
  const double moved = 2.0 * double(bytes);  // read + write
  std::printf("copy: %zu MiB buffers, %d warm-up, median of %d\n", mib, warmup, reps);
  std::printf("\n| copy | buffer MiB | median ms | min ms | max ms | GB/s (read+write, median) | GB/s (best) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  auto row = [&](const char* name, const std::vector<double>& t) {
    std::printf("| %s | %zu | %.3f | %.3f | %.3f | %.0f | %.0f |\n", name, mib, t[0], t[1], t[2],
                moved / (t[0] * 1e-3) / 1e9, moved / (t[1] * 1e-3) / 1e9);
  };
  row("cudaMemcpy D2D", memcpy_ms);
  row("copy kernel (16 B/thread)", kernel_ms);
  std::printf("d2d_memcpy_gbps: %.0f\n", moved / (memcpy_ms[0] * 1e-3) / 1e9);
  std::printf("d2d_kernel_gbps: %.0f\n", moved / (kernel_ms[0] * 1e-3) / 1e9);
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  return bad ? 1 : 0;
}
