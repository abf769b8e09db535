#include "kernels/cuda_cache.h"

#include <algorithm>
#include <vector>

#include "kernels/step_plan.h"

namespace H2O_CUDA_NS {

CudaCache::CudaCache(const PolicyConfig& policy, const kern::ModelDims& dims, DType storage,
                     std::shared_ptr<SharedStream> stream, std::shared_ptr<KvMemoryAccount> account)
    : CacheBook(policy, dims.layers, dims.kv_heads, std::move(account)),
      dims_(dims),
      storage_(storage),
      stream_(std::move(stream)) {}

CudaCache::~CudaCache() = default;  // the book gives its bytes back

int64_t CudaCache::row_bytes(const kern::ModelDims& dims, DType storage, bool rolling) {
  return int64_t(dims.head_dim) * dtype_size(storage) * (rolling ? 3 : 2) + int64_t(sizeof(int32_t) + sizeof(float));
}

int64_t CudaCache::live_bytes() const {
  return int64_t(held_) * dims_.layers * dims_.kv_heads * dims_.head_dim * 2 * dtype_size(storage_);
}

kern::CacheArrays CudaCache::arrays() const {
  kern::CacheArrays a;
  a.k = k_.get();
  a.v = v_.get();
  a.k_raw = k_raw_.get();
  a.pos = pos_.as<int32_t>();
  a.score = score_.as<float>();
  a.cap = cap_;
  return a;
}

void CudaCache::reserve_for(int rows) {
  const int target = grown_capacity(rule(), held_, cap_, rows);
  if (target == cap_) return;
  const int64_t heads = int64_t(dims_.layers) * dims_.kv_heads;
  const bool rolling = rule().rolling;
  const int64_t more = (int64_t(target) - cap_) * heads * row_bytes(dims_, storage_, rolling);
  book(more);  // CacheCannotGrow past the KV limit
  const size_t hd_bytes = size_t(dims_.head_dim) * size_t(dtype_size(storage_));
  gpu::DeviceBuffer k, v, k_raw, pos, score;
  try {
    k = gpu::DeviceBuffer(size_t(heads) * size_t(target) * hd_bytes);
    v = gpu::DeviceBuffer(size_t(heads) * size_t(target) * hd_bytes);
    if (rolling) k_raw = gpu::DeviceBuffer(size_t(heads) * size_t(target) * hd_bytes);
    pos = gpu::DeviceBuffer(size_t(heads) * size_t(target) * sizeof(int32_t));
    score = gpu::DeviceBuffer(size_t(heads) * size_t(target) * sizeof(float));
  } catch (const gpu::OutOfDeviceMemory& e) {
    unbook(more);
    throw CacheCannotGrow(std::string("out of device memory growing the KV cache (") + e.what() + ")");
  } catch (...) {
    unbook(more);
    throw;
  }
  // The tokens held move to the same slots of the wider rows.
  if (held_ > 0) {
    const gpu::Stream s = stream_->stream;
    const auto move_rows = [&](gpu::DeviceBuffer& to, const gpu::DeviceBuffer& from, size_t bytes_per_slot) {
      gpu::copy_rows_on_device(to.get(), size_t(target) * bytes_per_slot, from.get(), size_t(cap_) * bytes_per_slot,
                               size_t(held_) * bytes_per_slot, size_t(heads), s);
    };
    move_rows(k, k_, hd_bytes);
    move_rows(v, v_, hd_bytes);
    if (rolling) move_rows(k_raw, k_raw_, hd_bytes);
    move_rows(pos, pos_, sizeof(int32_t));
    move_rows(score, score_, sizeof(float));
    gpu::synchronize(s);  // before the old arrays are freed
  }
  k_ = std::move(k);
  v_ = std::move(v);
  k_raw_ = std::move(k_raw);
  pos_ = std::move(pos);
  score_ = std::move(score);
  cap_ = target;
}

void CudaCache::reserve_reference(int rows, int vocab) {
  reference_logits_.reserve(size_t(rows) * size_t(vocab) * sizeof(float));
  reference_log_z_.reserve(size_t(rows) * sizeof(double));
}

void CudaCache::end_forward(int rows, int kept, EvictionSummary evictions, std::map<int, LayerState> layers) {
  end_step(rows, std::move(evictions));
  held_ = kept;
  last_layers_ = std::move(layers);
}

LayerState CudaCache::read_layer(int layer) const {
  if (auto it = last_layers_.find(layer); it != last_layers_.end()) return it->second;
  if (layer < 0 || layer >= dims_.layers) throw Error("read_layer: layer " + std::to_string(layer) + " does not exist");
  LayerState state;
  state.layer = layer;
  const gpu::Stream s = stream_->stream;
  for (int g = 0; g < dims_.kv_heads; ++g) {
    const size_t first = (size_t(layer) * dims_.kv_heads + size_t(g)) * size_t(cap_);
    std::vector<int32_t> positions(static_cast<size_t>(held_));
    std::vector<float> scores(static_cast<size_t>(held_));
    gpu::copy_to_host(positions.data(), pos_.as<int32_t>() + first, positions.size() * sizeof(int32_t), s);
    gpu::copy_to_host(scores.data(), score_.as<float>() + first, scores.size() * sizeof(float), s);
    gpu::synchronize(s);
    state.positions.push_back(std::move(positions));
    state.scores.push_back(std::move(scores));
  }
  return state;
}

}  // namespace H2O_CUDA_NS
