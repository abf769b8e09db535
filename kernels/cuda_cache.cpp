#include "kernels/cuda_cache.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/step_plan.h"

namespace H2O_CUDA_NS {

CudaCache::CudaCache(const PolicyConfig& policy, const kern::ModelDims& dims, DType storage,
                     std::shared_ptr<SharedStream> stream, std::shared_ptr<KvMemoryAccount> account)
    : CacheBook(policy, dims.layers, dims.kv_heads, std::move(account)),
      dims_(dims),
      storage_(storage),
      stream_(std::move(stream)),
      // f16 KV (--kv-bits 16) is what an f16 cache keeps already (keys after RoPE and values rounded to
      // nearest even, read back exactly, 2 bytes an element: SEMANTICS.md); an f32 cache keeps it in
      // the quantized layout's f16 runs, which then never flush.
      low_bit_(policy.kv.quantized() || (!policy.kv.native() && storage != DType::F16)) {
  if (low_bit_) counts_.assign(size_t(dims.layers) * dims.kv_heads * kern::kCounts, 0);
}

namespace {

// A device copy of `from`, enqueued on `s` (the caller synchronizes).
gpu::DeviceBuffer copy_of(const gpu::DeviceBuffer& from, gpu::Stream s) {
  gpu::DeviceBuffer to(from.bytes());
  if (from.bytes()) gpu::copy_on_device(to.get(), from.get(), from.bytes(), s);
  return to;
}

}  // namespace

CudaCache::CudaCache(const CudaCache& other, int64_t bytes)
    : CacheBook(other, bytes),
      dims_(other.dims_),
      storage_(other.storage_),
      stream_(other.stream_),
      held_(other.held_),
      cap_(other.cap_),
      low_bit_(other.low_bit_),
      low_caps_(other.low_caps_),
      counts_(other.counts_),
      last_layers_(other.last_layers_) {
  const gpu::Stream s = stream_->stream;
  for (auto [to, from] : {std::pair{&k_, &other.k_}, {&v_, &other.v_}, {&k_raw_, &other.k_raw_}, {&pos_, &other.pos_},
                          {&score_, &other.score_}, {&full_k_, &other.full_k_}, {&full_v_, &other.full_v_},
                          {&quant_k_, &other.quant_k_}, {&quant_v_, &other.quant_v_},
                          {&value_scales_, &other.value_scales_}, {&key_scales_, &other.key_scales_},
                          {&group_of_, &other.group_of_}, {&counts_device_, &other.counts_device_},
                          {&reference_logits_, &other.reference_logits_},
                          {&reference_log_z_, &other.reference_log_z_}})
    *to = copy_of(*from, s);
  gpu::synchronize(s);
}

std::unique_ptr<CudaCache> CudaCache::fork() const {
  try {
    return std::unique_ptr<CudaCache>(new CudaCache(*this, booked_bytes()));
  } catch (const gpu::OutOfDeviceMemory& e) {
    throw CacheCannotGrow(std::string("out of device memory copying the KV cache (") + e.what() + ")");
  }
}

CudaCache::~CudaCache() = default;  // the book gives its bytes back

int64_t CudaCache::row_bytes(const kern::ModelDims& dims, DType storage, bool rolling) {
  return int64_t(dims.head_dim) * dtype_size(storage) * (rolling ? 3 : 2) + int64_t(sizeof(int32_t) + sizeof(float));
}

int64_t CudaCache::live_bytes() const {
  if (!low_bit_) return int64_t(held_) * dims_.layers * dims_.kv_heads * dims_.head_dim * 2 * dtype_size(storage_);
  const kvq::Shape shape = low_bit_shape(policy().kv, dims_.head_dim);
  int64_t bytes = 0;
  for (size_t h = 0; h < counts_.size(); h += kern::kCounts) bytes += shape.live_bytes(kern::runs_at(&counts_[h]));
  return bytes;
}

int CudaCache::quantized_tokens() const {
  int most = 0;
  for (size_t h = 0; h < counts_.size(); h += kern::kCounts) most = std::max(most, int(counts_[h + kern::kQuantized]));
  return most;
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
    low.shape = low_bit_shape(policy().kv, dims_.head_dim);
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

// The most f16 rows and key groups any head may need by the step's end
// (low_bit_layout.h's most_after_step); the quantized run shares the cache's rows.
CudaCache::LowBitCaps CudaCache::low_bit_caps(int slots, int rows) const {
  const kvq::Shape shape = low_bit_shape(policy().kv, dims_.head_dim);
  int most_full = 0, most_groups = 0;
  for (size_t h = 0; h < counts_.size(); h += kern::kCounts) {
    const kvq::Runs most = shape.most_after_step(kern::runs_at(&counts_[h]), rows);
    most_full = std::max(most_full, most.f16_tokens());
    most_groups = std::max(most_groups, most.groups);
  }
  LowBitCaps caps;
  caps.full = grown_capacity(low_caps_.full, most_full, slots);
  caps.groups = grown_capacity(low_caps_.groups, most_groups, slots, 4);
  return caps;
}

void CudaCache::reserve_for(int rows) {
  const int target = grown_capacity(rule(), held_, cap_, rows);
  const LowBitCaps caps = low_bit_ ? low_bit_caps(target, rows) : LowBitCaps{};
  if (target == cap_ && caps.full == low_caps_.full && caps.groups == low_caps_.groups) return;
  regrow(target, caps);
}

// Every array of the cache, [layer][kv_head][rows] of row_bytes: the f16 (or
// f32) keys and values, or a quantized cache's runs, and the positions and scores.
std::vector<CudaCache::Run> CudaCache::runs(int target, const LowBitCaps& caps) {
  const size_t hd = size_t(dims_.head_dim);
  if (!low_bit_) {
    const size_t row = hd * size_t(dtype_size(storage_));
    return {{&k_, row, cap_, target, held_},
            {&v_, row, cap_, target, held_},
            {&k_raw_, rule().rolling ? row : 0, cap_, target, held_},
            {&pos_, 4, cap_, target, held_},
            {&score_, 4, cap_, target, held_}};
  }
  const kvq::Shape shape = low_bit_shape(policy().kv, dims_.head_dim);
  const size_t f16_row = size_t(shape.f16_row_bytes());
  return {{&pos_, 4, cap_, target, held_},
          {&score_, 4, cap_, target, held_},
          {&quant_k_, size_t(shape.key_row_bytes()), cap_, target, held_},
          {&quant_v_, size_t(shape.value_row_bytes()), cap_, target, held_},
          {&value_scales_, size_t(shape.value_scale_bytes()), cap_, target, held_},
          {&group_of_, 4, cap_, target, held_},
          {&full_k_, f16_row, low_caps_.full, caps.full, low_caps_.full},
          {&full_v_, f16_row, low_caps_.full, caps.full, low_caps_.full},
          {&key_scales_, size_t(shape.key_group_bytes()), low_caps_.groups, caps.groups, low_caps_.groups}};
}

// Every array at its new capacity, all allocated before any is replaced (so a
// failure changes nothing), each head's rows moved to the same place in the
// wider runs. Throws CacheCannotGrow at the KV limit or when the device is full.
void CudaCache::regrow(int target, const LowBitCaps& caps) {
  const std::vector<Run> all = runs(target, caps);
  const size_t heads = size_t(dims_.layers) * size_t(dims_.kv_heads);
  const size_t counts_bytes = low_bit_ && !counts_device_.get() ? heads * kern::kCounts * sizeof(int32_t) : 0;
  int64_t more = int64_t(counts_bytes);
  for (const Run& r : all) more += int64_t(heads) * (r.new_rows - r.old_rows) * int64_t(r.row_bytes);
  book(more);  // CacheCannotGrow past the KV limit
  std::vector<gpu::DeviceBuffer> grown(all.size());
  gpu::DeviceBuffer counts;
  try {
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].row_bytes > 0 && all[i].new_rows != all[i].old_rows)
        grown[i] = gpu::DeviceBuffer(heads * size_t(all[i].new_rows) * all[i].row_bytes);
    if (counts_bytes) counts = gpu::DeviceBuffer(counts_bytes);
  } catch (const gpu::OutOfDeviceMemory& e) {
    unbook(more);
    throw CacheCannotGrow(std::string("out of device memory growing the KV cache (") + e.what() + ")");
  } catch (...) {
    unbook(more);
    throw;
  }
  const gpu::Stream s = stream_->stream;
  if (counts_bytes) {
    gpu::fill_on_device(counts.get(), 0, counts_bytes, s);
    counts_device_ = std::move(counts);
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const Run& r = all[i];
    if (grown[i].get() && r.used > 0)
      gpu::copy_rows_on_device(grown[i].get(), size_t(r.new_rows) * r.row_bytes, r.buffer->get(),
                               size_t(r.old_rows) * r.row_bytes, size_t(r.used) * r.row_bytes, heads, s);
  }
  gpu::synchronize(s);  // before the old arrays are freed
  for (size_t i = 0; i < all.size(); ++i)
    if (grown[i].get()) *all[i].buffer = std::move(grown[i]);
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
