#include "kernels/weight_convert.h"

#include <cstring>
#include <vector>

#include "core/base/error.h"

namespace h2o::kern {

DType parse_precision(const std::string& name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  fail("--precision", "expected f32, f16 or bf16, got '" + name + "'");
}

void convert_elements(const void* src, DType from, size_t count, DType to, void* dst) {
  if (from == to) {
    std::memcpy(dst, src, count * size_t(dtype_size(from)));
    return;
  }
  // Through float32, a chunk at a time: every type widens to it exactly.
  constexpr size_t kChunk = 1 << 16;
  std::vector<float> wide(std::min(count, kChunk));
  const auto* in = static_cast<const char*>(src);
  auto* out = static_cast<char*>(dst);
  for (size_t done = 0; done < count; done += kChunk) {
    const size_t n = std::min(kChunk, count - done);
    convert_to_f32(in + done * size_t(dtype_size(from)), from, n, wide.data());
    switch (to) {
      case DType::F32:
        std::memcpy(out + done * 4, wide.data(), n * 4);
        break;
      case DType::F16: {
        auto* o = reinterpret_cast<uint16_t*>(out) + done;
        for (size_t i = 0; i < n; ++i) o[i] = f32_to_f16(wide[i]);
        break;
      }
      case DType::BF16: {
        auto* o = reinterpret_cast<uint16_t*>(out) + done;
        for (size_t i = 0; i < n; ++i) o[i] = f32_to_bf16(wide[i]);
        break;
      }
      default:  // parse_precision admits the three float types alone
        fail("--precision", std::string("cannot store weights as ") + dtype_name(to));
    }
  }
}

void convert_tensor(const Tensor& t, DType to, void* dst) {
  if (is_float(t.dtype)) {
    convert_elements(t.data, t.dtype, size_t(t.numel()), to, dst);
    return;
  }
  // Quantised: a row at a time (rows are whole blocks), through f32.
  std::vector<float> row(size_t(t.cols));
  const auto* in = static_cast<const char*>(t.data);
  auto* out = static_cast<char*>(dst);
  const size_t out_row = size_t(t.cols) * size_t(dtype_size(to));
  for (int64_t r = 0; r < t.rows; ++r) {
    convert_to_f32(in + size_t(r) * size_t(t.row_bytes()), t.dtype, size_t(t.cols), row.data());
    convert_elements(row.data(), DType::F32, row.size(), to, out + size_t(r) * out_row);
  }
}

}  // namespace h2o::kern
