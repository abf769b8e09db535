#pragma once
// Host planning of one step's attention captures (core/runtime/capture.h),
// in plain C++: which (item, layer) rows attention_scores writes in full, the
// kept key slots of each request (kept_key_slots, as every backend trims),
// the units capture.cu runs, where each piece lands in the step's readback,
// and how the pieces become AttentionCaptures again (the top-k share averaged
// over rows as AttentionCapture::top_share says).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/runtime/capture.h"
#include "kernels/step_desc.h"
#include "kernels/step_plan.h"

namespace h2o::kern {

// One item's capture requests and where its captures go.
struct CaptureJob {
  int item = 0;
  int keys = 0;              // slots after the append, before the cut
  int rows = 0;              // rows fed
  int64_t tokens_seen = 0;   // before the step
  const std::vector<CaptureRequest>* requests = nullptr;
  std::vector<AttentionCapture>* out = nullptr;
};

class CaptureLayout {
 public:
  // Shapes every capture (sizing `*job.out`), reserves its pieces in
  // `readback` and its kept-slot lists in `inputs`. `items` x `dims.layers`
  // slots; requests must name existing layers and heads.
  CaptureLayout(std::span<const CaptureJob> jobs, int items, const ModelDims& dims, BlockLayout& readback,
                BlockLayout& inputs);

  size_t unit_count() const { return units_.size(); }
  size_t probs_floats() const { return probs_floats_; }  // the full rows of every captured (item, layer)
  size_t work_floats() const { return work_floats_; }    // capture.cu's scratch
  // The slots attention_scores reads ([item * layers + layer]; null probs: not captured),
  // with the full rows placed at `probs`.
  std::vector<CaptureSlot> slots(float* probs) const;
  // Copies the kept-slot lists into the host image of the inputs block.
  void write_lists(char* inputs_host) const;
  // The units, with their pointers into the device's buffers.
  std::vector<CaptureUnit> units(float* probs, float* work, const char* inputs_device, char* readback_device) const;
  // Fills the captures from the readback's host copy.
  void read(const char* readback_host) const;

 private:
  struct Unit {
    CaptureUnit unit;  // pointers not yet set
    size_t list = 0, probs_at = 0, out_at = 0, share_at = 0, work_at = 0;
  };
  struct Readout {
    AttentionCapture* out = nullptr;
    int top_k = 0, slots = 0;
    std::vector<size_t> positions;            // per KV head
    std::vector<std::vector<size_t>> probs;   // per captured head, per row
    std::vector<std::vector<size_t>> shares;  // per captured head, per row
  };
  int layers_ = 0;
  std::vector<int> slot_rows_;
  std::vector<size_t> slot_at_;
  std::vector<std::vector<int>> lists_;
  std::vector<size_t> lists_at_;
  std::vector<Unit> units_;
  std::vector<Readout> readouts_;
  size_t probs_floats_ = 0, work_floats_ = 0;
};

}  // namespace h2o::kern
