#pragma once
// The engine: one model, one backend, one session per policy, all fed the
// same prompt stream. It never touches widgets or files: each step() returns
// a StepRecord that the run loop (core/runtime/run_loop.h) hands to the logs,
// the recording and the app's analyzer.
//
// Two modes:
//  - stream: MT-Bench turns appended one after another to one conversation
//    that is never reset; each session generates its own answer.
//  - forced: a fixed token sequence fed to every session (teacher forcing),
//    scored by next-token NLL and by agreement/KL against the full cache.
#include <chrono>
#include <deque>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/backend.h"
#include "core/runtime/step_record.h"
#include "core/text/chat_template.h"
#include "core/text/prompts.h"
#include "core/text/tokenizer.h"

namespace h2o {

struct EngineOptions {
  std::vector<PolicyConfig> policies;
  SamplingConfig sampling;
  int max_new_tokens = 128;  // per turn
  int prefill_chunk = 64;    // prompt tokens per forward pass
  int forced_chunk = 1;      // forced-mode tokens per forward pass
  std::string chat_template;  // a "...{turn}..." pattern; "": the model's own template (core/text/chat_template.h)
  bool batched = false;       // all sessions in one forward (weights read once); else one forward each, timed apart
  bool loop_prompts = false;  // start the prompt list again after the last turn (endless demo)
  void validate() const;      // throws Error naming the flag
};

// Totals of one session so far.
struct SessionTotals {
  int64_t generated = 0;  // answer tokens chosen (the first of each answer comes from the prefill)
  int64_t decoded = 0;    // tokens fed by decode steps
  int64_t prefilled = 0;
  double decode_seconds = 0, prefill_seconds = 0;
  double nll_sum = 0, kl_sum = 0;
  int64_t scored = 0, agreed = 0;
  double decode_tokens_per_s() const { return decode_seconds > 0 ? decoded / decode_seconds : 0; }
  double prefill_tokens_per_s() const { return prefill_seconds > 0 ? prefilled / prefill_seconds : 0; }
  double perplexity() const { return scored ? std::exp(nll_sum / scored) : NAN; }
  double mean_kl() const { return scored ? kl_sum / scored : NAN; }
  double agreement() const { return scored ? double(agreed) / scored : NAN; }
};

class Session {
 public:
  Session(const PolicyConfig& policy, std::unique_ptr<SessionCache> cache, const SamplingConfig& sampling)
      : policy_(policy), cache_(std::move(cache)), sampler_(sampling) {}
  const PolicyConfig& policy() const { return policy_; }
  const SessionCache& cache() const { return *cache_; }
  const std::vector<int>& stream() const { return stream_; }
  const SessionTotals& totals() const { return totals_; }
  // Why the session stopped early; empty while it runs.
  const std::string& stopped() const { return stopped_; }

 private:
  friend class Engine;
  PolicyConfig policy_;
  std::unique_ptr<SessionCache> cache_;
  Sampler sampler_;
  std::vector<int> stream_;  // every token fed so far
  int pending = -1;          // chosen, not yet fed
  bool answering = false;    // still generating in this turn
  bool answer_cut = false;   // the last answer stopped at max_new_tokens, not at a stop token
  int generated_in_turn = 0;
  SessionTotals totals_;
  std::string stopped_;
};

// What to read out of each session's step, decided by the caller step by step.
class CaptureSchedule {
 public:
  virtual ~CaptureSchedule() = default;
  virtual CapturePlan plan(int64_t step, const Session& session) const = 0;
};

class Engine {
 public:
  Engine(std::shared_ptr<const Model> model, std::unique_ptr<Backend> backend,
         std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options);

  void start_stream(std::vector<Turn> turns);
  // A turn typed into the live stream: it begins when the current turn ends,
  // before the rest of the list (which then goes on where it was). Its steps
  // record prompt_index -1. Several queue in order. Throws Error in forced
  // mode or once the stream is over.
  void queue_turn(Turn turn);
  size_t queued_turns() const { return queued_.size(); }
  // A needle planted into the live stream (SEMANTICS.md, "Needles"): `ids`
  // fed as they are when the current turn ends, before any queued turn, with
  // no answer after them. The step that feeds their first tokens records
  // each session's needle positions (SessionRecord::needle_begin). Throws
  // Error in forced mode, once the stream is over, or for no ids.
  void plant(std::vector<int> ids);
  // Forks of every session's cache as it is now (Backend::fork), null for a
  // session that stopped: what an ask of the app questions, leaving the live
  // sessions untouched. Throws CacheCannotGrow past the KV limit.
  std::vector<std::unique_ptr<SessionCache>> fork_caches();
  // The backend, for running forks (fork_caches) between steps.
  Backend& backend() { return *backend_; }
  void start_forced(std::vector<int> tokens);
  // The stream is over, or every session has stopped.
  bool done() const { return phase_ == Phase::Done; }
  // Every session stopped early (its cache could not grow): the run ended before the stream did.
  bool all_stopped() const { return live_sessions().empty(); }
  // One step for every session still running; `schedule` says what to capture.
  StepRecord step(const CaptureSchedule* schedule = nullptr);

  const EngineOptions& options() const { return options_; }
  const Model& model() const { return *model_; }
  const Backend& backend() const { return *backend_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const std::vector<std::unique_ptr<Session>>& sessions() const { return sessions_; }
  const std::vector<Turn>& turns() const { return turns_; }
  const ChatTemplate& chat_template() const { return template_; }
  int64_t steps() const { return step_; }
  double engine_seconds() const { return engine_seconds_; }

 private:
  // One item per session of this step, with what it asks the backend for.
  struct Work {
    int session = 0;
    std::vector<int> fed;
    bool choose = false;  // choose the next token from the last row
    TokenChoice choice;
    int chosen = -1;
    const ForcedTargets* forced = nullptr;
    ForcedScores scores;
    CapturePlan plan;
    ForwardItem item;     // made by run() from the above
    int64_t needle_begin = -1;  // a needle turn's first chunk: where its ids start in the session's stream
    SessionRecord record;
    double ms = -1;  // < 0: the session stopped in this step
  };

  void begin_turn();
  void step_prefill(StepRecord& record, const CaptureSchedule* schedule);
  void step_decode(StepRecord& record, const CaptureSchedule* schedule);
  void step_forced(StepRecord& record, const CaptureSchedule* schedule);
  // Fills the item's outputs and capture plan for session `index` fed `fed`.
  Work prepare(int index, std::vector<int> fed, const CaptureSchedule* schedule);
  // Runs the work (batched or one by one), timing each item. An item whose
  // cache cannot grow stops its session (its ms stays -1) and the others run again.
  void run(std::vector<Work>& work);
  void stop(Work& w, const std::string& why);
  std::vector<int> live_sessions() const;
  // The record's numbers of session `index` after its forward pass.
  void observe(Work& w);
  std::string text_of(int token, int previous) const;
  bool is_stop(int token) const;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  std::vector<std::unique_ptr<Session>> sessions_;
  int reference_ = -1;  // the first session that evicts nothing: the reference for agreement/KL
  ChatTemplate template_;
  std::vector<int> stop_ids_;  // ids that end an answer (they are fed like any other token)

  Phase phase_ = Phase::Done;
  int64_t step_ = 0;
  double engine_seconds_ = 0;
  std::vector<Turn> turns_;
  int turn_ = -1;
  std::deque<Turn> queued_;  // typed turns, begun before the list's next
  bool typed_ = false;       // the current turn was typed (queue_turn)
  bool needle_turn_ = false; // the current turn is a planted needle (plant): no answer follows
  std::vector<int> prompt_;  // tokens of the current turn
  size_t prompt_done_ = 0;   // prefilled so far
  std::vector<int> forced_;
  size_t forced_done_ = 0;
};

}  // namespace h2o
