#pragma once
// The app's needle as the analyzer keeps it (docs/STUDIO.md, "The needle"):
// what was planted, where each pane's stream holds it, and every ask's
// answers; and from a pane's whole history (stream_history.h) what each
// (layer, KV head) still holds of it at any step — the eviction steps the
// history keeps anyway, so a needle costs nothing per step.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/analysis/snapshot.h"
#include "core/analysis/stream_history.h"
#include "core/runtime/step_record.h"

namespace h2o {

class PackedReader;
class PackedWriter;

class NeedleWatch {
 public:
  explicit NeedleWatch(size_t panes = 0) : spans_(panes) {}
  // The plant, each session's needle positions, and an ask's answers, from one step.
  void ingest(const StepRecord& record);
  bool planted() const { return plant_.has_value(); }
  // The needle as `histories` (one per pane) held it at `step`.
  NeedleSnapshot snapshot(const std::vector<PolicyHistory>& histories, int layers, int kv_heads, int64_t step) const;
  // The pane's needle positions, for marking them ([begin, end), -1 while not fed by `step`).
  std::pair<int64_t, int64_t> span(size_t pane, int64_t step) const;

  // ---- checkpoints (analyzer_checkpoint.cpp) ----
  void save(PackedWriter& w) const;
  // Throws Error for what does not fit `panes` panes or steps below `steps_end`.
  static NeedleWatch load(PackedReader& r, size_t panes, int64_t steps_end);

 private:
  struct Span {
    int64_t begin = -1, end = -1, step = -1;
  };
  struct Ask {
    int64_t step = -1;
    std::vector<AskAnswer> panes;
  };
  std::optional<NeedlePlant> plant_;
  int64_t plant_step_ = -1;
  std::vector<Span> spans_;  // per pane
  std::vector<Ask> asks_;    // in step order
};

// One pane's needle at `step`: what each (layer, KV head) holds, the
// survival curve since it was fed, when it was lost; asks are added by the caller.
NeedlePane needle_pane(const PolicyHistory& history, int layers, int kv_heads, int64_t begin, int64_t end,
                       int64_t fed_step, int64_t step);

// One pane's needle in a plain sentence (the Needle tab, the report): "StreamingLLM dropped the needle at
// step 812, 610 tokens after it"; `who`: the policy's title.
std::string needle_words(const std::string& who, const NeedlePane& pane, int kv_heads);
// The newest ask's answer of one pane in a sentence ("" : none yet).
std::string ask_words(const NeedlePane& pane);
// The report's lines: the needle, then a line per pane (needle_words, ask_words); none without a needle.
std::vector<std::string> needle_report_lines(const NeedleSnapshot& needle, const std::vector<PolicyConfig>& policies);

// A needle of the form "the X is Y" asked back: "What is the X? The X is" and
// "Y" (without its final stop). Neither when the text has no " is ".
struct NeedleQuestion {
  std::string question, answer;
};
std::optional<NeedleQuestion> question_of_needle(const std::string& needle);

}  // namespace h2o
