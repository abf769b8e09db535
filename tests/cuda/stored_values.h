#pragma once
// Test helper: host floats as the device stores them in a storage type (f32,
// f16, bf16), rounded as the device rounds them, and read back.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/model/dtype.h"

namespace h2o::test {

// Each value rounded to type t (to nearest even) and widened again.
inline std::vector<float> rounded(const std::vector<float>& x, DType t) {
  std::vector<float> out(x);
  for (float& v : out) v = t == DType::F16 ? f16_to_f32(f32_to_f16(v)) : t == DType::BF16 ? bf16_to_f32(f32_to_bf16(v)) : v;
  return out;
}

// Host floats as device storage of type t, and back.
inline std::vector<uint8_t> stored(const std::vector<float>& x, DType t) {
  std::vector<uint8_t> out(x.size() * size_t(dtype_size(t)));
  for (size_t i = 0; i < x.size(); ++i) {
    if (t == DType::F32) std::memcpy(&out[i * 4], &x[i], 4);
    else {
      const uint16_t h = t == DType::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}
inline std::vector<float> loaded(const std::vector<uint8_t>& b, DType t) {
  std::vector<float> out(b.size() / size_t(dtype_size(t)));
  convert_to_f32(b.data(), t, out.size(), out.data());
  return out;
}

}  // namespace h2o::test
