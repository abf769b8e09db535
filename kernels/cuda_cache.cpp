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
      stream_(std::move(stream)),
      low_bit_(policy.kv.quantized()) {
  if (low_bit_) counts_.assign(size_t(dims.layers) * dims.kv_heads * kern::kCounts, 0);
}

CudaCache::~CudaCache() = default;  // the book gives its bytes back

int64_t CudaCache::row_bytes(const kern::ModelDims& dims, DType storage, bool rolling) {
  return int64_t(dims.head_dim) * dtype_size(storage) * (rolling ? 3 : 2) + int64_t(sizeof(int32_t) + sizeof(float));
}

int64_t CudaCache::live_bytes() const {
  if (!low_bit_) return int64_t(held_) * dims_.layers * dims_.kv_heads * dims_.head_dim * 2 * dtype_size(storage_);
  int64_t bytes = 0;
  for (size_t h = 0; h < counts_.size(); h += kern::kCounts)
    bytes += low_bit_live_bytes(policy().kv, dims_.head_dim, counts_[h + kern::kSinks] + counts_[h + kern::kResidual],
                                counts_[h + kern::kQuantized], counts_[h + kern::kGroups]);
  return bytes;
}

int64_t CudaCache::attention_bytes_per_layer(int keys) const {
  if (!low_bit_) return int64_t(keys) * dims_.kv_dim * 2 * dtype_size(storage_);
  return live_bytes() / dims_.layers + int64_t(keys - held_) * dims_.kv_dim * 2 * 2;
}

kern::CacheArrays CudaCache::arrays() const {
  kern::CacheArrays a;
  a.k = k_.get();
  a.v = v_.get();
  a.k_raw = k_raw_.get();
  a.pos = pos_.as<int32_t>();
  a.score = score_.as<float>();
  a.cap = cap_;
  if (low_bit_) {
    kern::LowBitArrays& low = a.low;
    low.key_bits = policy().kv.key_bits;
    low.value_bits = policy().kv.value_bits;
    low.group = policy().kv.group;
    low.residual = policy().kv.residual;
    low.full_k = full_k_.as<uint16_t>();
    low.full_v = full_v_.as<uint16_t>();
    low.full_cap = low_caps_.full;
    low.quant_k = quant_k_.as<uint8_t>();
    low.quant_v = quant_v_.as<uint8_t>();
    low.value_scales = value_scales_.as<uint32_t>();
    low.key_scales = key_scales_.as<uint32_t>();
    low.group_cap = low_caps_.groups;
    low.group_of = group_of_.as<int32_t>();
    low.counts = counts_device_.as<int32_t>();
  }
  return a;
}

// The most f16 rows and key groups any head may need by the step's end: its
// sinks and residual with every new row, and a group for each whole G of them.
CudaCache::LowBitCaps CudaCache::low_bit_caps(int slots, int rows) const {
  const int G = policy().kv.group;
  int most_full = 0, most_groups = 0;
  for (size_t h = 0; h < counts_.size(); h += kern::kCounts) {
    const int residual = counts_[h + kern::kResidual];
    most_full = std::max(most_full, counts_[h + kern::kSinks] + residual);
    most_groups = std::max(most_groups, counts_[h + kern::kGroups] + (residual + rows) / G);
  }
  LowBitCaps caps;
  caps.full = grown_capacity(low_caps_.full, most_full + rows, slots);
  caps.groups = grown_capacity(low_caps_.groups, std::max(most_groups, 1), slots, 4);
  return caps;
}

int64_t CudaCache::bytes_at(int slots, const LowBitCaps& caps) const {
  const int64_t heads = int64_t(dims_.layers) * dims_.kv_heads, hd = dims_.head_dim;
  if (slots == 0) return 0;
  const KvPrecision& kv = policy().kv;
  int64_t slot_bytes = int64_t(sizeof(int32_t) + sizeof(float)) + kern::low_bit_row_bytes(int(hd), kv.key_bits) +
                       kern::low_bit_row_bytes(int(hd), kv.value_bits) + int64_t(sizeof(int32_t));
  if (kv.value_bits < 16) slot_bytes += hd / kv.group * 4;
  const int64_t group_bytes = kv.key_bits < 16 ? hd * 4 : 0;
  return heads * (slots * slot_bytes + int64_t(caps.full) * hd * 2 * 2 + int64_t(caps.groups) * group_bytes +
                  kern::kCounts * int64_t(sizeof(int32_t)));
}

void CudaCache::reserve_for(int rows) {
  const int target = grown_capacity(rule(), held_, cap_, rows);
  if (low_bit_) {
    const LowBitCaps caps = low_bit_caps(target, rows);
    if (target != cap_ || caps.full != low_caps_.full || caps.groups != low_caps_.groups) reserve_low_bit(target, caps);
    return;
  }
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

// Every array of a quantized cache at its new capacities, all allocated
// before any is replaced (so a failure changes nothing), each head's rows
// moved to the same place in the wider runs.
void CudaCache::reserve_low_bit(int target, const LowBitCaps& caps) {
  const int64_t more = bytes_at(target, caps) - bytes_at(cap_, low_caps_);
  book(more);  // CacheCannotGrow past the KV limit
  const size_t heads = size_t(dims_.layers) * size_t(dims_.kv_heads), hd = size_t(dims_.head_dim);
  const KvPrecision& kv = policy().kv;
  struct Run {
    gpu::DeviceBuffer* buffer;
    size_t row_bytes;
    int old_rows, new_rows;
  };
  const std::vector<Run> runs = {
      {&pos_, 4, cap_, target},
      {&score_, 4, cap_, target},
      {&quant_k_, size_t(kern::low_bit_row_bytes(int(hd), kv.key_bits)), cap_, target},
      {&quant_v_, size_t(kern::low_bit_row_bytes(int(hd), kv.value_bits)), cap_, target},
      {&value_scales_, kv.value_bits < 16 ? hd / size_t(kv.group) * 4 : 0, cap_, target},
      {&group_of_, 4, cap_, target},
      {&full_k_, hd * 2, low_caps_.full, caps.full},
      {&full_v_, hd * 2, low_caps_.full, caps.full},
      {&key_scales_, kv.key_bits < 16 ? hd * 4 : 0, low_caps_.groups, caps.groups},
  };
  std::vector<gpu::DeviceBuffer> grown(runs.size());
  gpu::DeviceBuffer counts;
  try {
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].row_bytes > 0 && runs[i].new_rows != runs[i].old_rows)
        grown[i] = gpu::DeviceBuffer(heads * size_t(runs[i].new_rows) * runs[i].row_bytes);
    if (!counts_device_.get()) counts = gpu::DeviceBuffer(heads * kern::kCounts * sizeof(int32_t));
  } catch (const gpu::OutOfDeviceMemory& e) {
    unbook(more);
    throw CacheCannotGrow(std::string("out of device memory growing the KV cache (") + e.what() + ")");
  } catch (...) {
    unbook(more);
    throw;
  }
  const gpu::Stream s = stream_->stream;
  if (counts.get()) {
    gpu::fill_on_device(counts.get(), 0, heads * kern::kCounts * sizeof(int32_t), s);
    counts_device_ = std::move(counts);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    if (!grown[i].get()) continue;
    if (r.old_rows > 0)
      gpu::copy_rows_on_device(grown[i].get(), size_t(r.new_rows) * r.row_bytes, r.buffer->get(),
                               size_t(r.old_rows) * r.row_bytes, size_t(r.old_rows) * r.row_bytes, heads, s);
  }
  gpu::synchronize(s);  // before the old arrays are freed
  for (size_t i = 0; i < runs.size(); ++i)
    if (grown[i].get()) *runs[i].buffer = std::move(grown[i]);
  cap_ = target;
  low_caps_ = caps;
}

void CudaCache::reserve_reference(int rows, int vocab) {
  reference_logits_.reserve(size_t(rows) * size_t(vocab) * sizeof(float));
  reference_log_z_.reserve(size_t(rows) * sizeof(double));
}

void CudaCache::end_forward(int rows, int kept, EvictionSummary evictions, std::map<int, LayerState> layers,
                            std::vector<int32_t> counts) {
  end_step(rows, std::move(evictions));
  held_ = kept;
  last_layers_ = std::move(layers);
  if (low_bit_) counts_ = std::move(counts);
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
