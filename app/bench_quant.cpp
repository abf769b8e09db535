// h2o-bench-quant: how fast the quantised matrix-vector kernels stream
// weights (core/cpu/quant_matvec.h), per type and shape, on 1 and 2 threads,
// next to this machine's measured memory read bandwidth. A benchmark, never
// a timed test: numbers depend on the machine and on what else runs.
//
// Every cell times single matvecs, one after the other, and reports the
// best (and the median) of them: on a shared machine (this project's 2-core
// one runs other sessions' builds and tests) a matvec that no other process
// interrupted shows what the code does, while a pass of many matvecs is
// almost always cut by the scheduler; with 2 threads, one descheduled thread
// stalls the whole fork-join for milliseconds. The load average printed at
// the start says how shared the machine was.
//
// "streamed": as in decode, weights come from DRAM: the matrix is copied
// until the copies fill --mib (well past the last-level cache) and trial i
// runs on copy i mod copies. "hot": the same matrix every time, so it sits in
// cache: the kernels' compute ceiling. GB/s counts weight bytes only (10^9
// bytes per second); activations are quantised once per matvec on the calling
// thread and that time is included. The memory read bandwidth is measured the
// same way: 8 MiB slices of a --mib buffer, the best slice.
//
// With --isa best, each matvec runs as decode runs it (cpu::project): on
// row tiles where this CPU has a tile kernel for the type, so those rows'
// GB/s count the tiles' bytes; a named --isa times that set's row kernels.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "app/cli_flags.h"
#include "core/base/error.h"
#include "core/base/flush_denormals.h"
#include "core/base/format.h"
#include "core/base/system_limits.h"
#include "core/base/thread_pool.h"
#include "core/cpu/cpu_weights.h"
#include "core/cpu/quant_matvec.h"
#include "core/model/quant.h"

using namespace h2o;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
  std::string name;
  int64_t rows, cols;
};


double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double best(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs trial(i) for i = 0, 1, ... at least min_trials times and until
// `seconds` have passed; returns bytes / time of each trial in GB/s.
template <class Trial>
std::vector<double> time_trials(size_t bytes, int min_trials, double seconds, Trial trial) {
  std::vector<double> gbs;
  const auto start = Clock::now();
  for (int i = 0; i < min_trials || seconds_since(start) < seconds; ++i) {
    const auto t0 = Clock::now();
    trial(i);
    gbs.push_back(double(bytes) / seconds_since(t0) / 1e9);
  }
  return gbs;
}

// Reads words [lo, hi) of buf, split over the pool's threads; returns a
// checksum so that the reads cannot be optimised away. Eight independent
// 512-bit integer sums (GCC vectors; integer adds need no reassociation
// licence), so the loop is bound by memory, not by an add chain.
typedef uint64_t v8u __attribute__((vector_size(64)));
uint64_t read_slice(const uint64_t* buf, size_t lo, size_t hi, ThreadPool& pool) {
  const int chunks = pool.size();
  std::vector<uint64_t> partial(size_t(chunks), 0);
  pool.parallel_for(chunks, 1, [&](int begin, int end) {
    for (int c = begin; c < end; ++c) {
      const size_t a = lo + (hi - lo) * size_t(c) / size_t(chunks) / 64 * 64;
      const size_t b = lo + (hi - lo) * size_t(c + 1) / size_t(chunks) / 64 * 64;
      v8u s[8] = {};
      for (size_t i = a; i < b; i += 64)
        for (int k = 0; k < 8; ++k) {
          v8u v;
          std::memcpy(&v, buf + i + 8 * k, sizeof v);
          s[k] += v;
        }
      uint64_t t = 0;
      for (int k = 0; k < 8; ++k)
        for (int e = 0; e < 8; ++e) t += s[k][e];
      partial[size_t(c)] = t;
    }
  });
  uint64_t s = 0;
  for (uint64_t p : partial) s += p;
  return s;
}

// One matvec of `w` split over the pool as cpu::matmul splits its rows.
void matvec_parallel(QuantType t, const uint8_t* w, const Shape& s, const float* x, int n_x, cpu::QuantizedActs& acts,
                     float* out, ThreadPool& pool, cpu::Isa isa) {
  acts.prepare(t, x, n_x, s.cols);
  const int rows = int(s.rows);
  pool.parallel_for(rows, std::max(16, rows / (pool.size() * 4)), [&](int begin, int end) {
    cpu::matvec_rows(t, w, s.cols, begin, end, acts, out, s.rows, isa);
  });
}

struct Options {
  std::string types = "F32,F16,BF16,Q8_0,Q4_0,Q4_1,Q5_0,Q5_1,Q2_K,Q3_K,Q4_K,Q5_K,Q6_K";
  std::string shapes = "stories110M.wq:768x768,stories110M.w1:2048x768,stories110M.w2:768x2048,"
                       "tinyllama.w1:5632x2048,tinyllama.w2:2048x5632";
  std::string threads_list = "1,2", isa_name = "best";
  int mib = 256, batch = 1;
  double seconds = 0.5;
};

void add_flags(CLI::App& app, Options& o) {
  cli::one_line_flag_errors(app, "h2o-bench-quant");
  app.add_option("--types", o.types, "weight types, comma-separated (ggml names)");
  app.add_option("--shapes", o.shapes, "name:ROWSxCOLS, comma-separated");
  app.add_option("--threads", o.threads_list, "thread counts, comma-separated");
  cli::add_whole_flag(&app, "mib", o.mib, 1, 1 << 20, "MiB of weight copies for the streamed runs (well above the last-level cache)");
  app.add_option("--seconds", o.seconds, "time per cell (at least 100 matvecs)")->check(CLI::PositiveNumber);
  app.add_option("--isa", o.isa_name, "best, portable, avx2 or avx512");
  cli::add_whole_flag(&app, "batch", o.batch, 1, 64, "activation rows per matvec (the sessions of a batched decode step)");
}

cpu::Isa isa_asked(const std::string& name) {
  cpu::Isa isa = cpu::best_isa();
  if (name == "portable") isa = cpu::Isa::Portable;
  else if (name == "avx2") isa = cpu::Isa::Avx2;
  else if (name == "avx512") isa = cpu::Isa::Avx512;
  else if (name != "best") fail("--isa " + name, "expected best, portable, avx2 or avx512");
  if (!cpu::isa_supported(isa)) fail("--isa " + name, "not supported by this CPU");
  return isa;
}

std::vector<Shape> shapes_asked(const std::string& list) {
  std::vector<Shape> shapes;
  for (const auto& s : flag_list(list, "--shapes", "shape")) {
    const auto colon = s.find(':'), x = s.find('x', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || x == std::string::npos) fail("--shapes " + s, "expected name:ROWSxCOLS");
    const auto side = [&](size_t from, size_t to) {
      const uint64_t n = parse_flag_uint(s.substr(from, to - from), "--shapes " + s, uint64_t(1) << 20);
      if (n == 0) fail("--shapes " + s, "rows and columns must be at least 1");
      return int64_t(n);
    };
    shapes.push_back({s.substr(0, colon), side(colon + 1, x), side(x + 1, s.size())});
  }
  return shapes;
}

// Memory read bandwidth over a buffer as large as the streamed weights, for
// each thread count; printed, and returned in GB/s.
std::vector<double> read_bandwidths(size_t stream_bytes, const std::vector<int>& thread_counts, double seconds,
                                    uint64_t& sink) {
  std::vector<uint64_t> big(stream_bytes / 8);
  for (size_t i = 0; i < big.size(); ++i) big[i] = i * 0x9E3779B97F4A7C15ull;
  std::vector<double> read_gbs;
  const size_t slice = (size_t(8) << 20) / 8, slices = big.size() / slice;
  for (int th : thread_counts) {
    ThreadPool pool(th);
    const auto v = time_trials(slice * 8, 100, seconds, [&](int i) {
      const size_t k = size_t(i) % slices;
      sink += read_slice(big.data(), k * slice, (k + 1) * slice, pool);
    });
    read_gbs.push_back(best(v));
    std::cout << "memory read bandwidth, " << th << " thread(s): " << std::fixed << std::setprecision(1)
              << read_gbs.back() << " GB/s (median " << median(v) << ")\n";
  }
  return read_gbs;
}

// The table's rows of one type at one shape: streamed and hot, at every thread count.
void bench_cell(const std::string& type_name, QuantType t, const Shape& s, const Options& o, cpu::Isa isa,
                const std::vector<int>& thread_counts, const std::vector<double>& read_gbs, std::mt19937_64& rng,
                uint64_t& sink) {
  std::normal_distribution<float> g(0.0f, 0.02f);
  const size_t rb = row_bytes(t, s.cols), mat = rb * size_t(s.rows);
  std::vector<uint8_t> w(mat);
  {
    std::vector<float> row(size_t(s.cols));
    for (int64_t r = 0; r < s.rows; ++r) {
      for (float& v : row) v = g(rng);
      quantize_row(t, row.data(), w.data() + size_t(r) * rb, s.cols);
    }
  }
  // Decode's path reads the tiles, where there are any: the copies are of those.
  const bool tiled = o.isa_name == "best" && cpu::tiles_available(t) && s.rows >= cpu::kTileRows;
  const std::vector<uint8_t> tiles = tiled ? cpu::make_tiles(t, w.data(), s.rows, s.cols) : std::vector<uint8_t>{};
  const std::vector<uint8_t>& read = tiled ? tiles : w;
  const size_t bytes = read.size(), copies = std::max<size_t>(1, (size_t(o.mib) << 20) / bytes);
  std::vector<uint8_t> stream(bytes * copies);
  for (size_t c = 0; c < copies; ++c) std::copy(read.begin(), read.end(), stream.begin() + c * bytes);
  std::vector<float> x(size_t(o.batch) * size_t(s.cols)), out(size_t(o.batch) * size_t(s.rows));
  for (float& v : x) v = g(rng) * 50;
  cpu::QuantizedActs acts;
  cpu::ProjectScratch scratch;
  const auto matvec = [&](const uint8_t* copy, ThreadPool& pool) {
    if (o.isa_name != "best") return matvec_parallel(t, copy, s, x.data(), o.batch, acts, out.data(), pool, isa);
    cpu::Matrix m{tiled ? w.data() : copy, t, s.rows, s.cols};
    if (tiled) m.tiles = copy, m.tile_count = s.rows / cpu::kTileRows;
    cpu::project(out.data(), x.data(), o.batch, m, pool, scratch);
  };
  for (size_t ti = 0; ti < thread_counts.size(); ++ti) {
    ThreadPool pool(thread_counts[ti]);
    const auto streamed =
        time_trials(bytes, 100, o.seconds, [&](int i) { matvec(stream.data() + size_t(i) % copies * bytes, pool); });
    const auto hot = time_trials(bytes, 100, o.seconds, [&](int) { matvec(read.data(), pool); });
    const double gbs = best(streamed);
    std::cout << "| " << type_name << (tiled ? " tiles" : "") << " | " << s.name << " " << s.rows << "x" << s.cols
              << " | " << std::setprecision(2) << double(bytes) / 1048576.0 << " | " << thread_counts[ti] << " | "
              << std::setprecision(1) << gbs << " (" << median(streamed) << ") | " << std::setprecision(0)
              << 100.0 * gbs / read_gbs[ti] << " % | " << std::setprecision(1) << best(hot) << " (" << median(hot)
              << ") | " << std::setprecision(1) << double(bytes) / (gbs * 1e3) << " |\n"
              << std::flush;
    sink += uint64_t(out[0] != 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Quantised matvec kernels: weight GB/s per type and shape vs measured memory read bandwidth"};
  Options o;
  add_flags(app, o);
  CLI11_PARSE(app, argc, argv);
  try {
    const cpu::Isa isa = isa_asked(o.isa_name);
    const std::vector<Shape> shapes = shapes_asked(o.shapes);
    const std::vector<int> thread_counts = parse_flag_ints(o.threads_list, "--threads", "thread count", 1, max_threads());
    const FlushDenormals fast_floats;  // as CpuBackend::forward runs

    std::string load;
    std::getline(std::ifstream("/proc/loadavg"), load);  // other work on the machine skews every number
    std::cout << "load average at start: " << load << "\n";
    std::cout << "kernels: " << cpu::isa_name(isa) << "; streamed = weights from " << o.mib << " MiB of copies; "
              << o.batch << " activation row(s) per matvec; GB/s = 10^9 weight bytes/s, best (median) of single matvecs\n\n";
    uint64_t sink = 0;
    const std::vector<double> read_gbs = read_bandwidths(size_t(o.mib) << 20, thread_counts, o.seconds, sink);
    std::cout << "\n| type | shape | MiB | threads | streamed GB/s (median) | % of read BW | hot GB/s (median) | "
                 "µs per streamed matvec |\n|---|---|---:|---:|---:|---:|---:|---:|\n";
    std::mt19937_64 rng(1);
    for (const auto& type_name : flag_list(o.types, "--types", "weight type")) {
      const auto t = quant_type_from_name(type_name);
      if (!t) fail("--types " + type_name, "unknown type");
      for (const Shape& s : shapes) bench_cell(type_name, *t, s, o, isa, thread_counts, read_gbs, rng, sink);
    }
    if (sink == 42) std::cout << "\n";  // keeps the reads alive
  } catch (const std::exception& e) {
    std::cerr << "h2o-bench-quant: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
