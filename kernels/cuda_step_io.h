#pragma once
// One forward pass's inputs and outputs on the CUDA backend, as one object:
// the plan from host bookkeeping (kernels/step_plan.h), the layout of the
// readback (what comes down) and of the inputs block (what goes up, in one
// copy), the pass's arguments over that block (StepArgs), and each item
// handed what came back. The backend sizes its scratch from it, runs the
// pass over its arguments and synchronises once; everything else about a
// step's I/O is here.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "core/runtime/backend.h"
#include "kernels/capture_layout.h"
#include "kernels/cuda_cache.h"
#include "kernels/cuda_scratch.h"
#include "kernels/launch.h"
#include "kernels/step_plan.h"

namespace H2O_CUDA_NS {
namespace cuda_impl {

// The device pointers of one step's inputs and scratch, as the kernels take them.
struct StepArgs {
  int items = 0, rows = 0, tiles = 0, tile_queries = 0, classified = 0, forced = 0, units = 0;
  int low_bit_tiles = 0;  // the last tiles: quantized caches' (attention_low_bit, then kv_flush)
  const int* tokens = nullptr;
  const int* row_item = nullptr;
  const kern::ItemDesc* item_desc = nullptr;
  const kern::RowTile* tile_desc = nullptr;
  const int* classify = nullptr;
  const kern::ChooseDesc* choose = nullptr;
  const kern::ForcedRow* forced_rows = nullptr;
  const kern::CaptureSlot* capture_slots = nullptr;
  const kern::CaptureUnit* capture_units = nullptr;
  kern::AttentionScratch attention;
  int32_t* evicted = nullptr;
  bool any_cut = false, any_forced = false;
  const float* rope_slots = nullptr;  // cos/sin per (slot, pair) when a rolling cache is cut
  int64_t kv_bytes_per_layer = 0;  // keys and values attention reads in one layer (for --op-times)
};

class StepIO {
 public:
  // Checks that need no device and room in every cache (before anything
  // runs; throws as the caches do), then the plan: rows, tiles, splits,
  // cuts, classified rows.
  StepIO(std::span<ForwardItem> items, const kern::ModelDims& dims, int multiprocessors);

  // What comes down: chosen tokens and evicted positions first (all a plain
  // decode step brings back), quantized caches' counts, then forced scores,
  // captures and layer states. Grows the readback and capture buffers.
  void lay_out_readback(PassScratch& s);
  // The inputs block, written on the host, and the pass's arguments over its
  // device copy: the fixed-offset parts first, the capture lists last, so a
  // graph serves every step of its key.
  void write_inputs(PassScratch& s);
  // After the pass, on `stream`: the copies into the readback the pass does
  // not write (layer states, quantized caches' counts), the readback down
  // (a plain decode step's part alone) and the logits items asked for.
  void enqueue_readback(PassScratch& s, gpu::Stream stream) const;
  // What came back (s.readback_host, once the stream is synchronised), to
  // each item and its cache: the chosen token, the evicted positions
  // (checked against the host's count), layer states, forced scores, captures.
  void deliver(const PassScratch& s) const;

  std::span<ForwardItem> items() const { return items_; }
  const std::vector<CudaCache*>& caches() const { return caches_; }
  const std::vector<kern::ItemShape>& shapes() const { return shapes_; }
  const kern::StepPlan& plan() const { return plan_; }
  const StepArgs& args() const { return args_; }
  bool forced() const { return forced_; }
  bool any_sample() const { return any_sample_; }
  // A decode step (one row an item, no forced scores, no logits read back): a graph may serve it.
  bool graphable() const { return graphable_; }
  // The capture units' count where the step captures (part of a graph's key), else -1.
  int capture_key() const { return captures_ ? int(capture_->unit_count()) : -1; }
  size_t inputs_bytes() const { return in_.size(); }

 private:
  // Where one (item, layer)'s positions and scores land in the readback.
  struct LayerReadout {
    size_t item = 0;
    int layer = 0;
    size_t positions = 0, scores = 0;  // readback offsets
  };

  void write_item_descs(kern::ItemDesc* desc) const;
  void write_choices(const PassScratch& s, kern::ChooseDesc* choose) const;
  void write_forced_rows(const PassScratch& s, kern::ForcedRow* forced_rows);
  std::map<int, LayerState> layer_states_of(size_t item, const char* back) const;
  // Bytes of a quantized cache's counts, every (layer, KV head).
  size_t counts_bytes() const { return size_t(dims_.layers) * dims_.kv_heads * kern::kCounts * sizeof(int32_t); }

  kern::ModelDims dims_;
  std::span<ForwardItem> items_;
  std::vector<CudaCache*> caches_;
  std::vector<kern::ItemShape> shapes_;
  kern::StepPlan plan_;
  int N_ = 0, T_ = 0, R_ = 0;  // items, rows, classified rows
  bool captures_ = false, forced_ = false, any_sample_ = false, graphable_ = false;
  kern::BlockLayout out_, in_, capture_lists_;  // the lists go last in `in_`: fixed offsets before them serve a graph
  size_t chosen_at_ = 0, evicted_at_ = 0, plain_end_ = 0;  // plain_end_: what a plain decode step brings back
  std::vector<int> evicted_base_;  // per item: its first evicted position in the readback
  std::vector<size_t> counts_at_;  // per quantized item: its heads' counts (kern::LowBitCount)
  std::vector<size_t> forced_at_;  // per item: its forced scores
  std::optional<kern::CaptureLayout> capture_;
  std::vector<LayerReadout> layer_readouts_;
  std::vector<bool> compared_;  // per item: its forced rows compare with a reference of this step
  StepArgs args_;
};

}  // namespace cuda_impl
}  // namespace H2O_CUDA_NS
