#pragma once
// Test helper: a producer that writes the next product's 8-bit input itself
// (a norm, an activation, the attention's combine) must write the bits
// quantize_int8 makes of its f32 output, and the same f32 output as without.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/device_buffer.h"
#include "kernels/int8_activations.h"
#include "kernels/launch.h"
#include "tests/cuda/device_array.h"

namespace h2o::test {

// `plain` (the producer's f32 rows without 8-bit output) quantised by
// quantize_int8 into `a`, against `fused` and `b`, what the producer wrote
// with them: the same bits in both.
inline void expect_same_inputs(const DeviceArray<float>& plain, const DeviceArray<float>& fused,
                               const gpu::DeviceBuffer& a, const gpu::DeviceBuffer& b, int rows, int dim,
                               const TestStream& s, const std::string& what) {
  kern::quantize_int8(plain.get(), rows, dim, kern::int8_rows_at(a.get(), rows, dim), s.get());
  const std::vector<float> p = plain.read(), f = fused.read();
  ASSERT_EQ(0, std::memcmp(p.data(), f.data(), p.size() * sizeof(float))) << what;
  std::vector<char> ha(kern::int8_rows_bytes(rows, dim)), hb(ha.size());
  gpu::copy_to_host(ha.data(), a.get(), ha.size(), s.get());
  gpu::copy_to_host(hb.data(), b.get(), hb.size(), s.get());
  s.sync();
  EXPECT_EQ(0, std::memcmp(ha.data(), hb.data(), ha.size())) << what;
}

}  // namespace h2o::test
