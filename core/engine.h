#pragma once
// The engine: one model, one backend, one session per policy, all fed the
// same prompt stream. It never touches widgets or files: each step() returns
// a StepReport that the CLI writes to logs and the GUI turns into pictures.
//
// Two modes:
//  - stream: MT-Bench turns appended one after another to one conversation
//    that is never reset; each session generates its own answer.
//  - forced: a fixed token sequence fed to every session (teacher forcing),
//    scored by next-token NLL and by agreement/KL against the full cache.
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "prompts.h"
#include "sampler.h"
#include "tokenizer.h"

namespace h2o {

struct EngineOptions {
  std::vector<PolicyConfig> policies;
  SamplingConfig sampling;
  int max_new_tokens = 128;  // per turn
  int prefill_chunk = 64;    // prompt tokens per forward pass
  int forced_chunk = 1;      // forced-mode tokens per forward pass
  std::string chat_template = kDefaultTemplate;
  bool batched = false;      // all sessions in one forward (weights read once); else one forward each, timed apart
  bool loop_prompts = false; // start the prompt list again after the last turn (endless demo)
  int capture_layer = -1;    // >= 0: capture attention of this layer every step
  int capture_rows = 1;
  void validate() const;     // throws Error naming the flag
};

enum class Phase { Prefill, Decode, Forced, Done };
const char* phase_name(Phase p);

// What one session did in one step.
struct SessionStep {
  int session = 0;
  std::vector<int> fed;          // tokens fed this step
  int token = -1;                // token generated this step (-1: none)
  std::string text;              // its text
  bool eos = false;
  int cached_tokens = 0;         // tokens per KV head after the cut (max over heads)
  int64_t live_bytes = 0, allocated_bytes = 0;
  double step_ms = 0;            // wall time of the forward pass that served this session
  double decode_tokens_per_s = 0;  // generated tokens / decode time so far
  std::vector<EvictionEvent> evictions;
  // Forced mode: per fed token that had a next token to predict.
  std::vector<double> nll, kl;
  std::vector<int> agree;  // 1 where the top-1 prediction equals the full cache's
  std::shared_ptr<AttentionCapture> attention;
  // Set on the one step where this session stopped (its cache could not grow:
  // out of memory, or past the KV limit); nothing was fed to it then, and it
  // takes no further part. The other sessions go on.
  std::string error;
};

struct StepReport {
  int64_t step = 0;
  Phase phase = Phase::Done;
  int prompt_index = -1;  // index into the turn list (stream mode)
  bool turn_start = false;
  bool turn_end = false;  // every session has finished its answer
  std::vector<SessionStep> sessions;
};

// Totals of one session so far.
struct SessionTotals {
  int64_t generated = 0;  // answer tokens sampled (the first of each answer comes from the prefill)
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
  int pending = -1;          // sampled, not yet fed
  bool answering = false;    // still generating in this turn
  int generated_in_turn = 0;
  std::vector<float> logits;
  SessionTotals totals_;
  std::string stopped_;
};

class Engine {
 public:
  Engine(std::shared_ptr<const Model> model, std::unique_ptr<Backend> backend,
         std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options);

  void start_stream(std::vector<Turn> turns);
  void start_forced(std::vector<int> tokens);
  // The stream is over, or every session has stopped.
  bool done() const { return phase_ == Phase::Done; }
  // Every session stopped early (its cache could not grow): the run ended before the stream did.
  bool all_stopped() const { return live_sessions().empty(); }
  StepReport step();

  void set_capture(int layer, int rows);
  const EngineOptions& options() const { return options_; }
  const Model& model() const { return *model_; }
  const Backend& backend() const { return *backend_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const std::vector<std::unique_ptr<Session>>& sessions() const { return sessions_; }
  const std::vector<Turn>& turns() const { return turns_; }
  int64_t steps() const { return step_; }

 private:
  void begin_turn();
  void step_prefill(StepReport& report);
  void step_decode(StepReport& report);
  void step_forced(StepReport& report);
  // Runs the items (batched or one by one), returning each item's wall time
  // in ms. owners[i] is the session of items[i]. An item whose cache cannot
  // grow stops its session (stop()): its time is -1 and the others run again.
  std::vector<double> run(std::vector<ForwardItem>& items, const std::vector<int>& owners, StepReport& report);
  void stop(int index, const std::string& why, StepReport& report);
  std::vector<int> live_sessions() const;
  SessionStep observe(int index, std::vector<int> fed, double ms) const;
  std::shared_ptr<AttentionCapture> request_capture(ForwardItem& item) const;
  std::string text_of(const Session& s, int token) const;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  std::vector<std::unique_ptr<Session>> sessions_;
  int full_index_ = -1;  // the full-cache session, reference for agreement/KL

  Phase phase_ = Phase::Done;
  int64_t step_ = 0;
  std::vector<Turn> turns_;
  int turn_ = -1;
  std::vector<int> prompt_;  // tokens of the current turn
  size_t prompt_done_ = 0;   // prefilled so far
  std::vector<int> forced_;
  size_t forced_done_ = 0;
};

}  // namespace h2o
