#pragma once
// What each weight becomes on the device, decided on the host from the
// tensors' types and shapes alone, and the one function every weight goes
// through on upload.
//
// `--precision` (BackendOptions::precision):
//  - f32, f16, bf16: every matrix in that type, whatever the file stored
//    (float types rounded, quantised blocks dequantised exactly to f32 first,
//    core/model/quant.h, then rounded); the projections' inputs in that type.
//  - native: each matrix keeps the file's type where the kernels read it in
//    place (native_type: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K blocks byte for byte,
//    f16), other block types become f16; the activations are f32, the KV
//    cache f16, and the projections' inputs f32, or two 8-bit terms where a
//    decode step multiplies blocks (CudaTuning::int8_activations, blas.h).
//    On a file without quantised matrices native is the file's float type,
//    as if named.
//  - "" (the default): native for a file with quantised matrices, else f32.
#include <cstddef>
#include <string>
#include <vector>

#include "core/model/dtype.h"
#include "core/model/model.h"

namespace h2o::kern {

struct Precision {
  DType storage = DType::F32;  // the projections' inputs, and every matrix unless native
  bool native = false;         // matrices keep native_matrix_types
};

// The precision `name` (f32, f16, bf16, native, or "") means for `model`;
// throws Error naming --precision for any other name.
Precision resolve_precision(const std::string& name, const Model& model);
// True if some matrix of `model` (a tensor of more than one row) is quantised.
bool has_quantised_matrix(const Model& model);

// The formats the block kernels read (kernels/quant_formats.cuh: matvec_quant.cu, dequantize.cu).
constexpr bool is_block_format(DType t) {
  return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
         t == DType::F16;
}

// The block formats matvec_int8 multiplies with 8-bit inputs (all but f16).
constexpr bool has_int8_path(DType t) { return is_block_format(t) && t != DType::F16; }

// At native precision, what a tensor stored as `t` with rows of `cols`
// becomes: itself where a block kernel reads it (an f16 row needs cols % 16
// == 0), f16 for the other quantised types (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K:
// their rows are whole 32-element blocks), f32 otherwise (f32; bf16, exactly;
// an f16 row of another length).
DType native_type(DType t, int64_t cols);
// The device types of a matrix fused from parts of these stored types (Q|K|V,
// gate|up) at native precision: each part's native_type, except that a part
// that becomes f32 makes them all f32 (an f32 part is multiplied with f32
// inputs by matvec.cu, which takes one type for the whole matrix).
std::vector<DType> native_matrix_types(const std::vector<DType>& stored, int64_t cols);

// The device type of each part of the matrix fused from `parts` (Q|K|V,
// gate|up, or one tensor), all of one row length: precision.storage for every
// part, or native_matrix_types at native precision.
std::vector<DType> matrix_types(const std::vector<const Tensor*>& parts, const Precision& precision);

// Bytes every run of a matrix's rows (consecutive parts of one type) is
// padded with on the device: the block kernels' aligned 4-byte loads may
// read up to 4 bytes past a run's last block (kernels/quant_formats.cuh).
constexpr size_t kMatrixTailBytes = 16;

// The weights' bytes on the device under `precision`, from the tensors'
// types and shapes alone (no data is read, nothing is allocated).
struct WeightBytes {
  // What one forward pass reads: every layer matrix, norm and bias, and the
  // classifier (of the embedding, a step reads only its rows).
  int64_t pass = 0;
  // Everything held: the matrices with their padding, the embedding, norms and biases (f32).
  int64_t device = 0;
};
WeightBytes weight_bytes(const Model& model, const Precision& precision);

// Converts `count` elements of float type `from` at `src` to `to` at `dst` (round to nearest even).
void convert_elements(const void* src, DType from, size_t count, DType to, void* dst);

// A tensor in type `to`: its bytes as stored when `to` is its own type, else
// (a float type) converted as above. What is uploaded.
void convert_tensor(const Tensor& t, DType to, void* dst);

}  // namespace h2o::kern
