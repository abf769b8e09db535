#pragma once
// A live run's needle (docs/STUDIO.md, "The needle"), between the engine and
// the sinks: planting one into the stream (Engine::plant) and asking for it.
// An ask comes after a step: every pane's cache is forked as that step left
// it (Engine::fork_caches), fed the question and the answer, and decoded
// greedily for a few tokens (core/needle/needle_answer.h); the answers ride
// on that step's record, so the recording and a replay hold them, and the
// live sessions go on untouched. It runs on the thread that steps the engine.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"

namespace h2o {

// What the panes' greedy answers say at most.
inline constexpr int kAskGreedyTokens = 8;

class NeedleSource final : public StepSource {
 public:
  NeedleSource(Engine& engine, StepSource& inner) : engine_(engine), inner_(inner) {}
  std::optional<StepRecord> next() override;
  std::string end_reason() const override { return inner_.end_reason(); }

  // Plants `text` when the current turn ends; `question` and `answer` ask
  // for it (empty: from a needle of the form "the X is Y", else refused).
  // Returns what to say. Throws Error naming the part that is missing.
  std::string plant(const std::string& text, std::string question = {}, std::string answer = {});
  // The next step is followed by an ask. Throws Error while no needle is in the stream.
  void ask_after_next_step();
  // An ask every `steps` steps once the needle is in the stream (0: none).
  void ask_every(int64_t steps) { every_ = steps; }
  bool planted() const { return plant_.has_value(); }
  // Asks run so far, the seconds they took (part of the source's time), and the KV bytes the last one's forks held.
  int64_t asks() const { return asks_; }
  double ask_seconds() const { return ask_s_; }
  int64_t ask_kv_bytes() const { return ask_kv_bytes_; }

 private:
  std::vector<AskAnswer> ask(int64_t step);

  Engine& engine_;
  StepSource& inner_;
  std::optional<NeedlePlant> plant_, unfed_;  // unfed_: planted, its first tokens not fed yet
  std::vector<int64_t> begin_, end_;          // each session's needle positions (-1: not fed)
  int64_t fed_step_ = -1;
  bool ask_next_ = false;
  int64_t every_ = 0;
  int64_t asks_ = 0, ask_kv_bytes_ = 0;
  double ask_s_ = 0;
};

}  // namespace h2o
