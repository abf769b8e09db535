#pragma once
// What one engine step did: the one record the CLI's logs, the app's
// analyzer, recordings and replays all read. The engine fills it; JSON lives
// in core/recording/recording.h.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime/capture.h"
#include "core/runtime/evictions.h"

namespace h2o {

enum class Phase { Prefill, Decode, Forced, Done };
const char* phase_name(Phase p);
Phase phase_from_name(const std::string& name);  // throws Error

// What one session did in one step.
struct SessionRecord {
  int session = 0;
  std::vector<int> fed;                // tokens fed this step
  int64_t position = 0;                // stream position of the first of them
  std::vector<std::string> fed_text;   // their texts
  int token = -1;                      // token generated this step (-1: none)
  std::string text;                    // its text
  bool eos = false;
  int cached_tokens = 0;               // tokens per KV head after the cut (max over heads)
  int quantized_tokens = 0;            // of them, held as low-bit codes (SessionCache::quantized_tokens)
  int64_t live_bytes = 0, allocated_bytes = 0;
  double step_ms = 0;                  // wall time of the forward pass that served this session
  double decode_tokens_per_s = 0;      // decode tokens / decode time so far
  double prefill_tokens_per_s = 0;     // prefill (and teacher-forced) tokens / their time so far
  EvictionSummary evictions;
  // Forced mode: per fed token that had a next token to predict.
  std::vector<double> nll, kl;
  std::vector<int> agree;              // 1 where the top-1 prediction equals the full cache's
  std::vector<AttentionCapture> attention;  // as the step's capture plan asked
  std::vector<LayerState> layer_states;     // likewise
  // On the step a planted needle's first tokens are fed (Engine::plant): its
  // stream positions [needle_begin, needle_end) in this session's stream (-1: none).
  int64_t needle_begin = -1, needle_end = -1;
  // Set on the one step where this session stopped (its cache could not grow:
  // out of memory, or past the KV limit); nothing was fed to it then, and it
  // takes no further part. The other sessions go on.
  std::string stopped;
};

// A needle planted into the stream (the app's needle, docs/STUDIO.md): its
// text and the question and answer that ask for it, as ids and as text.
struct NeedlePlant {
  std::string text, question, answer;
  std::vector<int> question_ids, answer_ids;
};

// One pane's answer when the needle is asked for after a step (an ask: a
// fork of its cache fed the question and the answer; SEMANTICS.md "Needles").
struct AskAnswer {
  double answer_nll = NAN;       // nats, summed over the answer's tokens; NaN: the pane had stopped
  int answer_tokens = 0;
  bool exact = false;            // every answer token the top-1 prediction
  double survival_answer = NAN;  // the needle's fraction held after the question's cut
  std::string said;              // what greedy decoding says after the question
};

struct StepRecord {
  int64_t step = 0;
  Phase phase = Phase::Done;
  int prompt_index = -1;      // index into the turn list (stream mode); -1: a typed turn (Engine::queue_turn)
  bool turn_start = false;
  bool turn_end = false;      // every session has finished its answer
  double engine_seconds = 0;  // engine time since the run began, this step included
  // The app's pipeline could not keep up and left out every capture of this
  // step but the watched layer's (core/runtime/step_pipeline.h); a recording says so.
  bool thinned = false;
  std::vector<SessionRecord> sessions;
  // The app's needle: planted on the step its first tokens are fed; an ask's
  // answers after this step, one per session (the pane's order).
  std::optional<NeedlePlant> needle;
  std::vector<AskAnswer> asked;
};

}  // namespace h2o
