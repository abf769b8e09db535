#include "kernels/device_weights.h"

#include <algorithm>
#include <map>

#include "core/base/error.h"
#include "core/model/quant.h"

namespace H2O_KERN_NS {
namespace {

void require_present(const Tensor& t, const char* what) {
  if (!t.data || t.numel() <= 0)
    throw Error(std::string("cuda backend: the model's shape has a ") + what + " but the model holds none");
}

}  // namespace

DeviceWeights::DeviceWeights(const Model& model, const Precision& precision, gpu::Stream stream)
    : precision_(precision), stream_(stream), model_tied_(model.shared_classifier()) {
  const ModelWeights& w = model.weights;
  embedding_ = upload_matrix({&w.token_embedding});
  for (const LayerWeights& l : w.layers) {
    DeviceLayerWeights d;
    d.attn_norm = upload_vectors({&l.attn_norm});
    d.wqkv = upload_matrix({&l.wq, &l.wk, &l.wv});
    d.wo = upload_matrix({&l.wo});
    d.ffn_norm = upload_vectors({&l.ffn_norm});
    // A GELU MLP has no gate: its "gate|up" product is the up projection alone.
    d.w13 = model.config.ffn == FfnKind::Gelu ? upload_matrix({&l.w3}) : upload_matrix({&l.w1, &l.w3});
    d.w2 = upload_matrix({&l.w2});
    upload_layer_biases(model, l, d);
    layers_.push_back(d);
  }
  final_norm_ = upload_vectors({&w.final_norm});
  if (model.config.norm == NormKind::Layer) final_norm_bias_ = upload_required(w.final_norm_bias, "final norm bias");
  if (!model_tied_) classifier_ = upload_matrix({&w.classifier});
  gpu::synchronize(stream_);
  // A pass reads every layer matrix, the norms and biases, and the classifier.
  bytes_.pass += classifier().bytes();
  for (const DeviceLayerWeights& l : layers_)
    for (const DeviceMatrix* m : {&l.wqkv, &l.wo, &l.w13, &l.w2}) bytes_.pass += m->bytes();

  // The scratch, the label and the longest 8-bit input, over every matrix.
  std::map<DType, int64_t> held;
  // `multiplied`: a product reads it (the embedding only when it is the classifier).
  auto visit = [&](const DeviceMatrix& m, bool multiplied) {
    scratch_ = std::max(scratch_, dequant_scratch_bytes(m));
    for (int i = 0; i < m.parts; ++i) {
      held[m.part[i].type] += int64_t(m.part[i].rows) * m.cols;
      if (multiplied && has_int8_path(m.part[i].type)) int8_cols_ = std::max(int8_cols_, m.cols);
    }
  };
  visit(embedding_, model_tied_);
  if (!model_tied_) visit(classifier_, true);
  for (const DeviceLayerWeights& l : layers_)
    for (const DeviceMatrix* m : {&l.wqkv, &l.wo, &l.w13, &l.w2}) visit(*m, true);
  if (!precision_.native) {
    label_ = dtype_name(precision_.storage);
    return;
  }
  std::vector<std::pair<int64_t, DType>> by_size;
  for (const auto& [type, elements] : held) by_size.push_back({-elements, type});
  std::sort(by_size.begin(), by_size.end());
  label_ = "native";
  for (size_t i = 0; i < by_size.size(); ++i) label_ += (i ? " + " : " ") + std::string(dtype_name(by_size[i].second));
}

void* DeviceWeights::upload_bytes(const std::vector<char>& host) {
  gpu::DeviceBuffer buffer(host.size());
  gpu::copy_to_device(buffer.get(), host.data(), host.size(), stream_);
  gpu::synchronize(stream_);  // `host` goes out of scope
  bytes_.device += int64_t(host.size());
  buffers_.push_back(std::move(buffer));
  return buffers_.back().get();
}

// Each run of consecutive parts of one device type is one buffer (so a run
// starts on the allocation's alignment), padded by kMatrixTailBytes.
DeviceMatrix DeviceWeights::upload_matrix(std::initializer_list<const Tensor*> parts) {
  const std::vector<const Tensor*> list(parts);
  const std::vector<DType> types = matrix_types(list, precision_);
  DeviceMatrix m;
  m.cols = int(list.front()->cols);
  for (size_t first = 0; first < list.size();) {
    size_t end = first;
    size_t bytes = 0;
    for (; end < list.size() && types[end] == types[first]; ++end)
      bytes += size_t(list[end]->rows) * row_bytes(types[end], m.cols);
    std::vector<char> host(bytes + kMatrixTailBytes, 0);
    int rows = 0;
    for (size_t at = 0, i = first; i < end; ++i) {
      convert_tensor(*list[i], types[i], host.data() + at);
      at += size_t(list[i]->rows) * row_bytes(types[i], m.cols);
      rows += int(list[i]->rows);
    }
    m.part[m.parts++] = {types[first], upload_bytes(host), rows};
    first = end;
  }
  return m;
}

void DeviceWeights::upload_layer_biases(const Model& model, const LayerWeights& l, DeviceLayerWeights& d) {
  const ModelConfig& c = model.config;
  if (c.attention_bias) {
    for (const Tensor* t : {&l.bq, &l.bk, &l.bv}) require_present(*t, "q/k/v bias");
    d.bqkv = upload_vectors({&l.bq, &l.bk, &l.bv});
  }
  if (c.output_bias) {
    d.bo = upload_required(l.bo, "attention output bias");
    d.b3 = upload_required(l.b3, "up projection bias");
    d.b2 = upload_required(l.b2, "down projection bias");
  }
  if (c.norm == NormKind::Layer) {
    d.attn_norm_bias = upload_required(l.attn_norm_bias, "attention norm bias");
    d.ffn_norm_bias = upload_required(l.ffn_norm_bias, "feed-forward norm bias");
  }
}

const float* DeviceWeights::upload_required(const Tensor& t, const char* what) {
  require_present(t, what);
  return upload_vectors({&t});
}

const float* DeviceWeights::upload_vectors(std::initializer_list<const Tensor*> parts) {
  size_t elements = 0;
  for (const Tensor* t : parts) elements += size_t(t->numel());
  std::vector<char> host(elements * 4);
  size_t at = 0;
  for (const Tensor* t : parts) {
    convert_tensor(*t, DType::F32, host.data() + at);
    at += size_t(t->numel()) * 4;
  }
  bytes_.pass += int64_t(host.size());
  return static_cast<const float*>(upload_bytes(host));
}

}  // namespace H2O_KERN_NS
