// Dispatch and activation preparation for the quantised matrix-vector kernels.
#include "core/cpu/quant_matvec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/base/error.h"
#include "core/cpu/quant_kernels.h"

namespace h2o::cpu {

struct ActsAccess {
  static kern::Acts view(const QuantizedActs& a) {
    kern::Acts v;
    v.n_x = a.n_x_;
    v.cols = a.cols_;
    v.f = a.f_.data();
    v.q = a.q_.data();
    v.d = a.d_.data();
    v.s = a.s_.data();
    v.bsum16 = a.bsum16_.data();
    v.bsum32 = a.bsum32_.data();
    v.q16 = a.q16_.data();
    v.sum32 = a.sum32_.data();
    v.sum16 = a.sum16_.data();
    v.lo = a.lo_.data();
    v.hi = a.hi_.data();
    return v;
  }
};

namespace {

std::atomic<bool> counting_passes{false};
std::atomic<int64_t> weight_row_passes{0};

}  // namespace

void kern::add_weight_passes(int64_t passes) {
  if (counting_passes.load(std::memory_order_relaxed)) weight_row_passes.fetch_add(passes, std::memory_order_relaxed);
}

WeightPassCount::WeightPassCount() {
  weight_row_passes.store(0);
  counting_passes.store(true);
}
WeightPassCount::~WeightPassCount() { counting_passes.store(false); }
int64_t WeightPassCount::passes() const { return weight_row_passes.load(); }

namespace {

// Quantises n = B values to integers of `levels` steps each side with one
// scale: d = max|x| / levels and q = round(x / d) (half to even), so
// |x - d q| <= d / 2 and |q| <= levels (the AVX kernels rely on -128 never
// occurring in 8 bits, and on |q| <= 32767 in 16). A non-finite block gets
// d = NaN and q = 0, so every output that reads it is NaN; a block whose
// largest magnitude is below 1e-30 reads as zeros.
template <class Int>
float quantise_block(const float* x, int n, Int* q, int levels) {
  // Sixteen lanes of each reduction (n is 32 or 256), so that both vectorise:
  // over one running maximum they did not, and were the slowest part of
  // preparing a row.
  constexpr int kLanes = 16;
  float lane_max[kLanes] = {};
  int lane_bad[kLanes] = {};  // NaN or infinite seen: std::max skips NaN
  for (int i = 0; i < n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const float a = std::fabs(x[i + k]);
      lane_max[k] = std::max(lane_max[k], a);
      lane_bad[k] |= !(a <= std::numeric_limits<float>::max());
    }
  float amax = 0;
  int bad = 0;
  for (int k = 0; k < kLanes; ++k) amax = std::max(amax, lane_max[k]), bad |= lane_bad[k];
  if (bad) {
    std::fill(q, q + n, Int(0));
    return NAN;
  }
  if (amax < 1e-30f) {  // levels / amax would overflow: such a block reads as zeros
    std::fill(q, q + n, Int(0));
    return 0;
  }
  const float id = float(levels) / amax;
  for (int i = 0; i < n; ++i) q[i] = Int(std::clamp(int(std::nearbyint(x[i] * id)), -levels, levels));
  return amax / float(levels);
}

template <class Int>
int sum_q(const Int* q, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += q[i];
  return s;
}

kern::Kernel kernel_for(QuantType t, Isa isa) {
  switch (isa) {
    case Isa::Portable: return kern::portable_kernel(t);
#ifdef H2O_QUANT_X86_KERNELS  // the AVX files are built (core/CMakeLists.txt)
    case Isa::Avx2: return kern::avx2_kernel(t);
    case Isa::Avx512: return kern::avx512_kernel(t);
#else
    default: return nullptr;
#endif
  }
  return nullptr;
}

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID (leaf 1, ECX): clang 14's __builtin_cpu_supports does not know "f16c".
bool cpu_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

bool detect(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Portable: return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_f16c();
    case Isa::Avx512:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma") && cpu_f16c();
  }
  return false;
#else
  return isa == Isa::Portable;
#endif
}

bool cpu_has(Isa isa) {
  static const bool has[3] = {detect(Isa::Portable), detect(Isa::Avx2), detect(Isa::Avx512)};
  return has[int(isa)];
}

// Error (one line, "<type><what>: ...") unless x was prepared for rows of `cols` of `type`.
void check_prepared_for(QuantType type, int64_t cols, const QuantizedActs& x, const char* what) {
  if (x.weight_type() != type || x.cols() != cols)
    fail(std::string(quant_type_name(type)) + what,
         std::string("activations prepared for ") + quant_type_name(x.weight_type()) + " rows of " + std::to_string(x.cols()));
}

kern::TileKernel tile_kernel_for(QuantType t) {
#ifdef H2O_QUANT_X86_KERNELS
  if (cpu_has(Isa::Avx512)) return kern::avx512_tile_kernel(t);
#endif
  (void)t;
  return nullptr;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Portable: return "portable";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  // A path whose translation unit was left out of the build has no kernels.
  return cpu_has(isa) && kernel_for(QuantType::Q8_0, isa) != nullptr;
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::Avx512) ? Isa::Avx512
                          : isa_supported(Isa::Avx2) ? Isa::Avx2
                                                     : Isa::Portable;
  return best;
}

ActFormat activation_format(QuantType t) {
  switch (t) {
    case QuantType::F32:
    case QuantType::F16:
    case QuantType::BF16: return ActFormat::F32;
    case QuantType::Q8_0: return ActFormat::Q16x32;
    case QuantType::Q4_0:
    case QuantType::Q4_1:
    case QuantType::Q5_0:
    case QuantType::Q5_1: return ActFormat::Q8x32;
    case QuantType::Q2_K:
    case QuantType::Q3_K: return ActFormat::Q8x256;
    case QuantType::Q4_K:
    case QuantType::Q5_K:
    case QuantType::Q6_K: return ActFormat::Q16x256;
  }
  return ActFormat::F32;
}

int activation_block(QuantType t) {
  switch (activation_format(t)) {
    case ActFormat::F32: return 1;
    case ActFormat::Q8x32:
    case ActFormat::Q16x32: return 32;
    case ActFormat::Q8x256:
    case ActFormat::Q16x256: return 256;
  }
  return 1;
}

bool eight_bit(ActFormat f) { return f == ActFormat::Q8x32 || f == ActFormat::Q8x256; }

void QuantizedActs::prepare(QuantType t, const float* x, int n_x, int64_t cols) {
  row_bytes(t, cols);  // throws on a row length that is not a whole number of blocks
  if (n_x < 1) fail(std::string(quant_type_name(t)) + " activations", std::to_string(n_x) + " rows");
  type_ = t;
  format_ = activation_format(t);
  n_x_ = n_x;
  cols_ = cols;
  const size_t n = size_t(n_x) * size_t(cols);
  if (format_ == ActFormat::F32) {
    f_.assign(x, x + n);
    return;
  }
  const int B = activation_block(t);
  d_.resize(n / B);
  if (!eight_bit(format_)) {
    // Q16x256's planes are signed bytes, q16 = 256 hi + lo, which holds for |q16| <= 32639.
    const bool signed_planes = format_ == ActFormat::Q16x256;
    q16_.resize(n);
    for (size_t b = 0; b < n / B; ++b)
      d_[b] = quantise_block(x + B * b, B, q16_.data() + B * b, signed_planes ? 32639 : 32767);
    if (signed_planes) {
      sum16_.resize(n / 16);
      sum32_.resize(n / 32);
      for (size_t k = 0; k < n / 16; ++k) sum16_[k] = sum_q(q16_.data() + 16 * k, 16);
      for (size_t k = 0; k < n / 32; ++k) sum32_[k] = sum16_[2 * k] + sum16_[2 * k + 1];
    }
    if (!tiles_available(t)) return;
    // The byte planes of the tile kernels (through local pointers: stores to
    // bytes may alias the vectors' own, which the loop then reloaded each time).
    lo_.resize(n);
    hi_.resize(n);
    const int16_t* q16 = q16_.data();
    uint8_t *lo = lo_.data(), *hi = hi_.data();
    for (size_t i = 0; i < n; ++i) {
      const int q = q16[i];
      const int h = signed_planes ? (q + 128) >> 8 : (q >> 8) + 128;
      hi[i] = uint8_t(h);
      lo[i] = uint8_t(signed_planes ? q - 256 * h : q & 0xFF);
    }
    return;
  }
  q_.resize(n);
  if (format_ == ActFormat::Q8x32) {
    s_.resize(n / 32);
    for (size_t b = 0; b < n / 32; ++b) {
      d_[b] = quantise_block(x + 32 * b, 32, q_.data() + 32 * b, 127);
      s_[b] = d_[b] * float(sum_q(q_.data() + 32 * b, 32));
    }
    return;
  }
  bsum16_.resize(n / 16);
  bsum32_.resize(n / 32);
  for (size_t b = 0; b < n / 256; ++b) d_[b] = quantise_block(x + 256 * b, 256, q_.data() + 256 * b, 127);
  for (size_t k = 0; k < n / 16; ++k) bsum16_[k] = int16_t(sum_q(q_.data() + 16 * k, 16));
  for (size_t k = 0; k < n / 32; ++k) bsum32_[k] = int16_t(bsum16_[2 * k] + bsum16_[2 * k + 1]);
}

float QuantizedActs::value(int t, int64_t i) const {
  const size_t k = size_t(t) * size_t(cols_) + size_t(i);
  if (format_ == ActFormat::F32) return f_[k];
  const float q = eight_bit(format_) ? float(q_[k]) : float(q16_[k]);
  return d_[k / size_t(activation_block(type_))] * q;
}

float QuantizedActs::scale(int t, int64_t i) const {
  if (format_ == ActFormat::F32) return 0;
  const size_t k = size_t(t) * size_t(cols_) + size_t(i);
  return d_[k / size_t(activation_block(type_))];
}

void matvec_rows(QuantType type, const void* w, int64_t cols, int64_t row_begin, int64_t row_end,
                 const QuantizedActs& x, float* out, int64_t out_stride, Isa isa) {
  const size_t rb = row_bytes(type, cols);
  check_prepared_for(type, cols, x, " matvec");
  if (!isa_supported(isa)) fail(std::string(isa_name(isa)) + " kernels", "not supported by this CPU");
  const kern::Kernel k = kernel_for(type, isa);
  if (!k) fail(std::string(quant_type_name(type)) + " matvec", std::string("no ") + isa_name(isa) + " kernel");
  if (row_end <= row_begin) return;
  k(static_cast<const uint8_t*>(w) + size_t(row_begin) * rb, rb, row_end - row_begin, ActsAccess::view(x),
    out + row_begin, out_stride);
}

namespace {

void tile_q8_0(const uint8_t* src, size_t rb, int64_t nb, uint8_t* tile) {
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = tile + size_t(b) * kern::TileQ8_0::kBytes;
    for (int r = 0; r < kTileRows; ++r) {
      const auto* from = reinterpret_cast<const BlockQ8_0*>(src + size_t(r) * rb + sizeof(BlockQ8_0) * size_t(b));
      std::memcpy(blk + kern::TileQ8_0::kD + 2 * r, &from->d, 2);
      int16_t sum = 0;
      for (int i = 0; i < 32; ++i) sum = int16_t(sum + from->qs[i]);
      std::memcpy(blk + kern::TileQ8_0::kSum + 2 * r, &sum, 2);
      for (int g = 0; g < 8; ++g) std::memcpy(blk + kern::TileQ8_0::kWeights + 64 * g + 4 * r, from->qs + 4 * g, 4);
    }
  }
}

// Per super-block: the 16 rows' d and dmin, scales and mins as [8 sub-blocks][16 rows],
// then the codes as [8 sub-blocks][4][16 rows][4 bytes]: byte e of group h holds
// element 8h + e of the sub-block (low nibble) and element 8h + 4 + e (high).
void tile_q4_k(const uint8_t* src, size_t rb, int64_t nb, uint8_t* tile) {
  for (int64_t b = 0; b < nb; ++b) {
    using T = kern::TileQ4_K;
    uint8_t* blk = tile + size_t(b) * T::kBytes;
    for (int r = 0; r < kTileRows; ++r) {
      const auto* from = reinterpret_cast<const BlockQ4_K*>(src + size_t(r) * rb + sizeof(BlockQ4_K) * size_t(b));
      std::memcpy(blk + T::kD + 2 * r, &from->d, 2);
      std::memcpy(blk + T::kDmin + 2 * r, &from->dmin, 2);
      uint8_t codes[256];
      for (int j = 0; j < 4; ++j)
        for (int p = 0; p < 32; ++p) {
          codes[64 * j + p] = from->qs[32 * j + p] & 0x0F;
          codes[64 * j + 32 + p] = from->qs[32 * j + p] >> 4;
        }
      for (int s = 0; s < 8; ++s) {
        k4_scale_min(from->scales, s, blk + T::kScales + 16 * s + r, blk + T::kMins + 16 * s + r);
        for (int h = 0; h < 4; ++h)
          for (int e = 0; e < 4; ++e)
            blk[T::kCodes + 256 * s + 64 * h + 4 * r + e] =
                uint8_t(codes[32 * s + 8 * h + e] | codes[32 * s + 8 * h + 4 + e] << 4);
      }
    }
  }
}
// Per super-block: the 16 rows' d, scales as [16 sub-blocks][16 rows], then
// per 16-element sub-block the codes (q + 32, 6 bits) of 4 groups of 4
// elements, [16 rows][4 bytes] each, packed as Q6_K packs them: 64 bytes of
// low nibbles for groups 0 (low) and 1 (high), 64 for groups 2 and 3, and
// 64 bytes of high bit pairs (bits 2g, 2g + 1 for group g).
void tile_q6_k(const uint8_t* src, size_t rb, int64_t nb, uint8_t* tile) {
  for (int64_t b = 0; b < nb; ++b) {
    using T = kern::TileQ6_K;
    uint8_t* blk = tile + size_t(b) * T::kBytes;
    std::memset(blk, 0, T::kBytes);
    for (int r = 0; r < kTileRows; ++r) {
      const auto* from = reinterpret_cast<const BlockQ6_K*>(src + size_t(r) * rb + sizeof(BlockQ6_K) * size_t(b));
      std::memcpy(blk + T::kD + 2 * r, &from->d, 2);
      for (int k = 0; k < 16; ++k) {
        blk[T::kScales + 16 * k + r] = uint8_t(from->scales[k]);
        uint8_t* sub = blk + T::kCodes + T::kSubBlock * k;
        for (int g = 0; g < 4; ++g)
          for (int e = 0; e < 4; ++e) {
            const uint8_t c = uint8_t(q6k_code(*from, 16 * k + 4 * g + e));
            const size_t at = size_t(4 * r + e);
            sub[64 * (g / 2) + at] |= uint8_t((c & 0x0F) << (4 * (g % 2)));
            sub[128 + at] |= uint8_t((c >> 4) << (2 * g));
          }
      }
    }
  }
}
}  // namespace

bool tiles_available(QuantType t) { return tile_kernel_for(t) != nullptr; }

size_t tile_bytes(QuantType t, int64_t cols) {
  row_bytes(t, cols);  // throws on a row length that is not a whole number of blocks
  switch (t) {
    case QuantType::Q8_0: return size_t(cols / 32) * kern::TileQ8_0::kBytes;
    case QuantType::Q4_K: return size_t(cols / 256) * kern::TileQ4_K::kBytes;
    case QuantType::Q6_K: return size_t(cols / 256) * kern::TileQ6_K::kBytes;
    default: fail(std::string(quant_type_name(t)) + " tiles", "not a tiled type");
  }
}

void make_tiles(QuantType t, const void* w, int64_t rows, int64_t cols, uint8_t* out) {
  const size_t tb = tile_bytes(t, cols), rb = row_bytes(t, cols);
  const auto* src = static_cast<const uint8_t*>(w);
  for (int64_t k = 0; k < rows / kTileRows; ++k) {
    const uint8_t* rows16 = src + size_t(kTileRows * k) * rb;
    uint8_t* tile = out + size_t(k) * tb;
    if (t == QuantType::Q8_0) tile_q8_0(rows16, rb, cols / 32, tile);
    else if (t == QuantType::Q4_K) tile_q4_k(rows16, rb, cols / 256, tile);
    else tile_q6_k(rows16, rb, cols / 256, tile);
  }
}

std::vector<uint8_t> make_tiles(QuantType t, const void* w, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(size_t(rows / kTileRows) * tile_bytes(t, cols));
  make_tiles(t, w, rows, cols, out.data());
  return out;
}

void matvec_tiles(QuantType type, const uint8_t* tiles, int64_t cols, int64_t tile_begin, int64_t tile_end,
                  const QuantizedActs& x, float* out, int64_t out_stride) {
  check_prepared_for(type, cols, x, " tiles");
  const kern::TileKernel k = tile_kernel_for(type);
  if (!k) fail(std::string(quant_type_name(type)) + " tiles", "no tile kernel on this CPU");
  if (tile_end <= tile_begin) return;
  k(tiles, cols, tile_begin, tile_end, ActsAccess::view(x), out, out_stride);
}

void matvec(QuantType type, const void* w, int64_t rows, int64_t cols, const float* x, int n_x, float* out,
            Isa isa) {
  QuantizedActs acts;
  acts.prepare(type, x, n_x, cols);
  matvec_rows(type, w, cols, 0, rows, acts, out, rows, isa);
}

}  // namespace h2o::cpu
