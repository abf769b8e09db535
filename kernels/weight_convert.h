#pragma once
// Weights reach the device in the backend's precision (f32, f16 or bf16)
// through one function, whatever the file stored: float types are rounded,
// quantised blocks (Q8_0, Q4_K, ...) dequantised exactly to f32 first
// (core/model/quant.h), then rounded. A fused dequantising matmul would keep
// them in their blocks on the device; this first version does not.
#include <cstddef>
#include <string>

#include "core/model/dtype.h"
#include "core/model/model.h"

namespace h2o::kern {

// "f32", "f16", "bf16" -> the type; throws Error naming --precision otherwise.
DType parse_precision(const std::string& name);

// Converts `count` elements of float type `from` at `src` to `to` at `dst` (round to nearest even).
void convert_elements(const void* src, DType from, size_t count, DType to, void* dst);

// A tensor of any weight type in the backend's precision (a float type): what is uploaded.
void convert_tensor(const Tensor& t, DType to, void* dst);

}  // namespace h2o::kern
