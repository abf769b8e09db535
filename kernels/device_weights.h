#pragma once
// The model's weights on the device, as `--precision` says (weight_convert.h):
// every matrix a DeviceMatrix (blas.h) of one or more runs of rows, Q|K|V and
// gate|up fused into one matrix each (at native precision a run per type:
// a Q4_K_M layer's Q|K|V is Q4_K rows then Q6_K rows), norms and biases f32.
#include <initializer_list>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "kernels/blas.h"
#include "kernels/device.h"
#include "kernels/device_buffer.h"
#include "kernels/namespaces.h"
#include "kernels/weight_convert.h"

namespace H2O_KERN_NS {

struct DeviceLayerWeights {
  DeviceMatrix wqkv, wo, w2;
  DeviceMatrix w13;  // gate|up for SwiGLU; up alone for the GELU MLP (no gate)
  const float *attn_norm = nullptr, *ffn_norm = nullptr;
  const float *attn_norm_bias = nullptr, *ffn_norm_bias = nullptr;  // LayerNorm (GPT-NeoX); null for RMSNorm
  const float* bqkv = nullptr;  // q|k|v biases (Qwen2, GPT-NeoX); null without
  const float *bo = nullptr, *b3 = nullptr, *b2 = nullptr;  // output, up and down biases (GPT-NeoX); null without
};

class DeviceWeights {
 public:
  // Uploads every weight of `model` (synchronously: the host copies are freed on return).
  DeviceWeights(const Model& model, const Precision& precision, gpu::Stream stream);

  const DeviceMatrix& embedding() const { return embedding_; }
  const DeviceMatrix& classifier() const { return model_tied_ ? embedding_ : classifier_; }
  const std::vector<DeviceLayerWeights>& layers() const { return layers_; }
  const float* final_norm() const { return final_norm_; }
  const float* final_norm_bias() const { return final_norm_bias_; }  // LayerNorm only; else null
  // What one pass reads and what the weights hold, as allocated (weight_bytes(model, precision) predicts both).
  const WeightBytes& bytes() const { return bytes_; }
  // The slab scratch Blas needs for products of many rows (dequant_scratch_bytes).
  size_t dequant_scratch() const { return scratch_; }
  // The longest row of a multiplied matrix with a part matvec_int8 takes (has_int8_path); 0: none.
  int int8_cols() const { return int8_cols_; }
  // "f16", or at native the device types held, most bytes first: "native q4_k + q6_k".
  const std::string& label() const { return label_; }

 private:
  DeviceMatrix upload_matrix(std::initializer_list<const Tensor*> parts);
  const float* upload_vectors(std::initializer_list<const Tensor*> parts);
  // A vector the model's shape says is there (a bias, a LayerNorm bias): one
  // that is missing is an error here, not a null read by every pass.
  const float* upload_required(const Tensor& t, const char* what);
  void upload_layer_biases(const Model& model, const LayerWeights& l, DeviceLayerWeights& d);
  void* upload_bytes(const std::vector<char>& host);

  Precision precision_;
  gpu::Stream stream_;
  std::vector<gpu::DeviceBuffer> buffers_;
  DeviceMatrix embedding_, classifier_;
  bool model_tied_ = false;
  std::vector<DeviceLayerWeights> layers_;
  const float* final_norm_ = nullptr;
  const float* final_norm_bias_ = nullptr;
  WeightBytes bytes_;
  size_t scratch_ = 0;
  int int8_cols_ = 0;
  std::string label_;
};

}  // namespace H2O_KERN_NS
