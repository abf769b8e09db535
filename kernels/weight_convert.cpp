#include "kernels/weight_convert.h"

#include <cstring>
#include <vector>

#include "core/base/error.h"
#include "core/model/quant.h"

namespace h2o::kern {

bool has_quantised_matrix(const Model& model) {
  for (const Tensor* t : model.all_tensors())
    if (t->rows > 1 && !is_float(t->dtype)) return true;
  return false;
}

Precision resolve_precision(const std::string& name, const Model& model) {
  if (name == "f32") return {DType::F32, false};
  if (name == "f16") return {DType::F16, false};
  if (name == "bf16") return {DType::BF16, false};
  if (name != "native" && !name.empty()) fail("--precision", "expected f32, f16, bf16 or native, got '" + name + "'");
  if (has_quantised_matrix(model)) return {DType::F32, true};
  // A float file: native is its own type (the first layer's matrices), the default f32.
  return {name.empty() ? DType::F32 : model.weight_dtype(), false};
}

DType native_type(DType t, int64_t cols) {
  if (t == DType::F16) return cols % 16 == 0 ? DType::F16 : DType::F32;
  if (is_block_format(t)) return t;
  return is_float(t) ? DType::F32 : DType::F16;
}

std::vector<DType> native_matrix_types(const std::vector<DType>& stored, int64_t cols) {
  std::vector<DType> out;
  bool any_f32 = false;
  for (DType t : stored) {
    out.push_back(native_type(t, cols));
    any_f32 = any_f32 || out.back() == DType::F32;
  }
  if (any_f32) out.assign(out.size(), DType::F32);
  return out;
}

std::vector<DType> matrix_types(const std::vector<const Tensor*>& parts, const Precision& precision) {
  if (!precision.native) return std::vector<DType>(parts.size(), precision.storage);
  std::vector<DType> stored;
  for (const Tensor* t : parts) stored.push_back(t->dtype);
  return native_matrix_types(stored, parts.empty() ? 0 : parts.front()->cols);
}

namespace {

// Bytes of a matrix fused from `parts` as the device holds it, without and with the padding of each run of one type.
WeightBytes matrix_bytes(const std::vector<const Tensor*>& parts, const Precision& precision) {
  const std::vector<DType> types = matrix_types(parts, precision);
  WeightBytes bytes;
  for (size_t i = 0; i < parts.size(); ++i) {
    bytes.pass += parts[i]->rows * int64_t(row_bytes(types[i], parts[i]->cols));
    if (i + 1 == parts.size() || types[i + 1] != types[i]) bytes.device += int64_t(kMatrixTailBytes);
  }
  bytes.device += bytes.pass;
  return bytes;
}

}  // namespace

WeightBytes weight_bytes(const Model& model, const Precision& precision) {
  const ModelWeights& w = model.weights;
  WeightBytes out;
  auto matrix = [&](const std::vector<const Tensor*>& parts, bool read_by_a_pass) {
    const WeightBytes m = matrix_bytes(parts, precision);
    if (read_by_a_pass) out.pass += m.pass;
    out.device += m.device;
  };
  auto vectors = [&](const std::vector<const Tensor*>& parts) {
    for (const Tensor* t : parts) out.pass += t->numel() * 4, out.device += t->numel() * 4;  // f32 whatever the file stored
  };
  matrix({&w.token_embedding}, model.shared_classifier());  // tied: the classifier, read whole
  for (const LayerWeights& l : w.layers) {
    matrix({&l.wq, &l.wk, &l.wv}, true);
    matrix({&l.wo}, true);
    if (model.config.ffn == FfnKind::Gelu)
      matrix({&l.w3}, true);  // no gate
    else
      matrix({&l.w1, &l.w3}, true);
    matrix({&l.w2}, true);
    vectors({&l.attn_norm, &l.ffn_norm});
    if (model.config.attention_bias) vectors({&l.bq, &l.bk, &l.bv});
    if (model.config.output_bias) vectors({&l.bo, &l.b3, &l.b2});
    if (model.config.norm == NormKind::Layer) vectors({&l.attn_norm_bias, &l.ffn_norm_bias});
  }
  vectors({&w.final_norm});
  if (model.config.norm == NormKind::Layer) vectors({&w.final_norm_bias});
  if (!model.shared_classifier()) matrix({&w.classifier}, true);
  return out;
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
      default:  // resolve_precision and native_type give float types or a tensor's own type
        fail("--precision", std::string("cannot store weights as ") + dtype_name(to));
    }
  }
}

void convert_tensor(const Tensor& t, DType to, void* dst) {
  if (t.dtype == to) {  // the bytes as stored (native blocks, or a float type kept)
    std::memcpy(dst, t.data, size_t(t.bytes()));
    return;
  }
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
