#include "engine.h"

#include <algorithm>

#include "error.h"

namespace h2o {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Prefill: return "prefill";
    case Phase::Decode: return "decode";
    case Phase::Forced: return "forced";
    case Phase::Done: return "done";
  }
  return "?";
}

void EngineOptions::validate() const {
  if (policies.empty()) fail("--policies", "no policy given");
  for (const auto& p : policies) p.validate();
  if (max_new_tokens < 1) fail("--max-new-tokens", "must be >= 1, got " + std::to_string(max_new_tokens));
  if (prefill_chunk < 1) fail("--prefill-chunk", "must be >= 1, got " + std::to_string(prefill_chunk));
  if (forced_chunk < 1) fail("--chunk", "must be >= 1, got " + std::to_string(forced_chunk));
  if (!(sampling.temperature >= 0)) fail("--temperature", "must be >= 0");
  if (!(sampling.top_p > 0 && sampling.top_p <= 1)) fail("--top-p", "must be in (0, 1]");
  if (capture_rows < 1) fail("capture rows", "must be >= 1");
}

Engine::Engine(std::shared_ptr<const Model> model, std::unique_ptr<Backend> backend,
               std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options)
    : model_(std::move(model)), backend_(std::move(backend)), tokenizer_(std::move(tokenizer)),
      options_(std::move(options)) {
  options_.validate();
  if (!tokenizer_) throw Error("engine: no tokenizer (use make_byte_tokenizer for models without one)");
  if (options_.capture_layer >= model_->config.n_layers)
    fail("--layer", "layer " + std::to_string(options_.capture_layer) + " does not exist (the model has " +
                        std::to_string(model_->config.n_layers) + ")");
  for (size_t i = 0; i < options_.policies.size(); ++i) {
    const PolicyConfig& p = options_.policies[i];
    sessions_.push_back(std::make_unique<Session>(p, backend_->new_cache(p), options_.sampling));
    if (p.kind == PolicyKind::Full && full_index_ < 0) full_index_ = int(i);
  }
}

void Engine::set_capture(int layer, int rows) {
  options_.capture_layer = layer < model_->config.n_layers ? layer : -1;
  options_.capture_rows = std::max(1, rows);
}

void Engine::start_stream(std::vector<Turn> turns) {
  if (turns.empty()) throw Error("prompts: no turns to stream");
  turns_ = std::move(turns);
  turn_ = -1;
  begin_turn();
}

void Engine::start_forced(std::vector<int> tokens) {
  if (tokens.size() < 2) throw Error("forced: need at least 2 tokens to score a prediction");
  for (int t : tokens)
    if (t < 0 || t >= model_->config.vocab_size)
      throw Error("forced: token id " + std::to_string(t) + " is outside the model's vocabulary");
  forced_ = std::move(tokens);
  forced_done_ = 0;
  phase_ = Phase::Forced;
}

void Engine::begin_turn() {
  ++turn_;
  if (turn_ >= int(turns_.size())) {
    if (!options_.loop_prompts) {
      phase_ = Phase::Done;
      return;
    }
    turn_ = 0;
  }
  prompt_.clear();
  const Turn& turn = turns_[turn_];
  if (!turn.ids.empty()) {
    prompt_ = turn.ids;
  } else {
    // The stream starts with BOS; later turns continue the same conversation.
    const bool started = std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return !s->stream_.empty(); });
    if (!started) prompt_.push_back(tokenizer_->bos_id());
    const auto ids = tokenizer_->encode(apply_template(options_.chat_template, turn.text));
    prompt_.insert(prompt_.end(), ids.begin(), ids.end());
  }
  for (int t : prompt_)
    if (t < 0 || t >= model_->config.vocab_size)
      fail("prompt", "token id " + std::to_string(t) + " is outside the model's vocabulary (" +
                         std::to_string(model_->config.vocab_size) + ")");
  prompt_done_ = 0;
  phase_ = Phase::Prefill;
}

StepReport Engine::step() {
  StepReport report;
  report.step = step_;
  report.phase = phase_;
  report.prompt_index = turn_;
  switch (phase_) {
    case Phase::Prefill: step_prefill(report); break;
    case Phase::Decode: step_decode(report); break;
    case Phase::Forced: step_forced(report); break;
    case Phase::Done: return report;
  }
  ++step_;
  if (all_stopped()) phase_ = Phase::Done;
  else if (report.turn_end) begin_turn();
  return report;
}

std::vector<int> Engine::live_sessions() const {
  std::vector<int> live;
  for (size_t i = 0; i < sessions_.size(); ++i)
    if (sessions_[i]->stopped_.empty()) live.push_back(int(i));
  return live;
}

void Engine::stop(int index, const std::string& why, StepReport& report) {
  Session& s = *sessions_[size_t(index)];
  s.stopped_ = why;
  s.answering = false;
  s.pending = -1;
  SessionStep step = observe(index, {}, 0);
  step.error = why;
  report.sessions.push_back(std::move(step));
}

std::vector<double> Engine::run(std::vector<ForwardItem>& items, const std::vector<int>& owners, StepReport& report) {
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  std::vector<double> ms(items.size(), -1.0);
  if (!options_.batched) {
    for (size_t i = 0; i < items.size(); ++i) {
      const auto t0 = clock::now();
      try {
        backend_->forward(std::span<ForwardItem>(&items[i], 1));
        ms[i] = ms_since(t0);
      } catch (const SessionFailure& f) {
        stop(owners[i], f.what(), report);
      }
    }
    return ms;
  }
  // Batched: a failure names its item before anything ran; drop it, run the rest.
  std::vector<size_t> left(items.size());
  for (size_t i = 0; i < left.size(); ++i) left[i] = i;
  while (!left.empty()) {
    std::vector<ForwardItem> batch;
    for (size_t i : left) batch.push_back(items[i]);
    const auto t0 = clock::now();
    try {
      backend_->forward(batch);
    } catch (const SessionFailure& f) {
      stop(owners[left[f.item()]], f.what(), report);
      left.erase(left.begin() + long(f.item()));
      continue;
    }
    const double elapsed = ms_since(t0);
    for (size_t i : left) ms[i] = elapsed;
    break;
  }
  return ms;
}

std::string Engine::text_of(const Session& s, int token) const {
  if (!tokenizer_ || token < 0) return {};
  const int previous = s.stream_.empty() ? -1 : s.stream_.back();
  return tokenizer_->piece_text(token, previous);
}

SessionStep Engine::observe(int index, std::vector<int> fed, double ms) const {
  const Session& s = *sessions_[index];
  SessionStep out;
  out.session = index;
  out.fed = std::move(fed);
  out.cached_tokens = s.cache().max_size();
  out.live_bytes = s.cache().live_bytes();
  out.allocated_bytes = s.cache().allocated_bytes();
  out.step_ms = ms;
  out.decode_tokens_per_s = s.totals().decode_tokens_per_s();
  out.evictions = s.cache().last_evictions();
  return out;
}

// Asks the backend for the attention of the layer being watched, if any.
std::shared_ptr<AttentionCapture> Engine::request_capture(ForwardItem& item) const {
  if (options_.capture_layer < 0) return nullptr;
  auto capture = std::make_shared<AttentionCapture>();
  item.capture = capture.get();
  item.capture_layer = options_.capture_layer;
  item.capture_rows = options_.capture_rows;
  return capture;
}

// Feeds the next chunk of the current turn's prompt to every session. A
// session's first chunk starts with the last token of its previous answer,
// which was sampled but not yet fed.
void Engine::step_prefill(StepReport& report) {
  report.turn_start = prompt_done_ == 0;
  const size_t n = std::min(prompt_.size() - prompt_done_, size_t(options_.prefill_chunk));
  const bool last_chunk = prompt_done_ + n == prompt_.size();
  const std::vector<int> live = live_sessions();
  std::vector<std::vector<int>> fed(live.size());
  std::vector<ForwardItem> items(live.size());
  std::vector<std::shared_ptr<AttentionCapture>> captures(live.size());
  for (size_t a = 0; a < live.size(); ++a) {
    Session& s = *sessions_[size_t(live[a])];
    if (prompt_done_ == 0 && s.pending >= 0) fed[a].push_back(s.pending);
    fed[a].insert(fed[a].end(), prompt_.begin() + prompt_done_, prompt_.begin() + prompt_done_ + n);
    items[a].cache = s.cache_.get();
    items[a].tokens = fed[a];
    items[a].logits = last_chunk ? &s.logits : nullptr;
    captures[a] = request_capture(items[a]);
  }
  const auto ms = run(items, live, report);
  prompt_done_ += n;

  for (size_t a = 0; a < live.size(); ++a) {
    if (ms[a] < 0) continue;  // stopped
    Session& s = *sessions_[size_t(live[a])];
    s.pending = -1;
    s.stream_.insert(s.stream_.end(), fed[a].begin(), fed[a].end());
    s.totals_.prefilled += int64_t(fed[a].size());
    s.totals_.prefill_seconds += ms[a] / 1000.0;
    SessionStep step = observe(live[a], fed[a], ms[a]);
    step.attention = captures[a];
    if (last_chunk) {
      // The answer's first token comes from the prompt's last row.
      const int token = s.sampler_.sample(s.logits);
      step.token = token;
      step.text = text_of(s, token);
      step.eos = token == tokenizer_->eos_id();
      s.generated_in_turn = 1;
      s.totals_.generated += 1;
      s.answering = !step.eos && options_.max_new_tokens > 1;
      s.pending = step.eos ? -1 : token;
    }
    report.sessions.push_back(std::move(step));
  }
  if (last_chunk) {
    const bool any = std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->answering; });
    phase_ = any ? Phase::Decode : Phase::Prefill;
    report.turn_end = !any;
  }
}

// One token for every session still answering.
void Engine::step_decode(StepReport& report) {
  std::vector<int> active;
  for (size_t i = 0; i < sessions_.size(); ++i)
    if (sessions_[i]->answering) active.push_back(int(i));
  std::vector<std::vector<int>> fed(active.size());
  std::vector<ForwardItem> items(active.size());
  std::vector<std::shared_ptr<AttentionCapture>> captures(active.size());
  for (size_t a = 0; a < active.size(); ++a) {
    Session& s = *sessions_[active[a]];
    fed[a] = {s.pending};
    items[a].cache = s.cache_.get();
    items[a].tokens = fed[a];
    items[a].logits = &s.logits;
    captures[a] = request_capture(items[a]);
  }
  const auto ms = run(items, active, report);

  for (size_t a = 0; a < active.size(); ++a) {
    if (ms[a] < 0) continue;  // stopped
    Session& s = *sessions_[active[a]];
    s.stream_.push_back(s.pending);
    s.totals_.decode_seconds += ms[a] / 1000.0;
    s.totals_.decoded += 1;
    const int token = s.sampler_.sample(s.logits);
    SessionStep step = observe(active[a], fed[a], ms[a]);
    step.attention = captures[a];
    step.token = token;
    step.text = text_of(s, token);
    step.eos = token == tokenizer_->eos_id();
    s.totals_.generated += 1;
    ++s.generated_in_turn;
    s.pending = step.eos ? -1 : token;
    s.answering = !step.eos && s.generated_in_turn < options_.max_new_tokens;
    report.sessions.push_back(std::move(step));
  }
  if (std::none_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->answering; })) {
    report.turn_end = true;
  }
}

// Teacher forcing: the same tokens for every session; each row's prediction of
// the next token is scored, and compared with the full cache's.
void Engine::step_forced(StepReport& report) {
  const size_t n = std::min(forced_.size() - forced_done_, size_t(options_.forced_chunk));
  std::vector<int> fed(forced_.begin() + forced_done_, forced_.begin() + forced_done_ + n);
  const std::vector<int> live = live_sessions();
  std::vector<ForwardItem> items(live.size());
  std::vector<std::shared_ptr<AttentionCapture>> captures(live.size());
  for (size_t a = 0; a < live.size(); ++a) {
    Session& s = *sessions_[size_t(live[a])];
    items[a].cache = s.cache_.get();
    items[a].tokens = fed;
    items[a].all_logits = true;
    items[a].logits = &s.logits;
    captures[a] = request_capture(items[a]);
  }
  const auto ms = run(items, live, report);

  const int vocab = model_->config.vocab_size;
  const size_t scored = std::min(n, forced_.size() - forced_done_ - 1);  // rows with a next token
  std::vector<std::vector<double>> logp(live.size());
  int reference = -1;  // the full cache's item, while it runs
  for (size_t a = 0; a < live.size(); ++a) {
    if (ms[a] < 0) continue;
    if (live[a] == full_index_) reference = int(a);
    logp[a].resize(size_t(vocab) * scored);
    for (size_t r = 0; r < scored; ++r)
      log_softmax(std::span<const float>(&sessions_[size_t(live[a])]->logits[r * vocab], vocab),
                  std::span<double>(&logp[a][r * vocab], vocab));
  }

  for (size_t a = 0; a < live.size(); ++a) {
    if (ms[a] < 0) continue;  // stopped
    Session& s = *sessions_[size_t(live[a])];
    s.stream_.insert(s.stream_.end(), fed.begin(), fed.end());
    s.totals_.prefilled += int64_t(n);
    s.totals_.prefill_seconds += ms[a] / 1000.0;
    SessionStep step = observe(live[a], fed, ms[a]);
    step.attention = captures[a];
    for (size_t r = 0; r < scored; ++r) {
      const int next = forced_[forced_done_ + r + 1];
      const double* lp = &logp[a][r * vocab];
      const double nll = -lp[next];
      step.nll.push_back(nll);
      s.totals_.nll_sum += nll;
      s.totals_.scored += 1;
      if (reference >= 0) {
        const double* ref = &logp[size_t(reference)][r * vocab];
        double kl = 0;
        for (int t = 0; t < vocab; ++t) kl += std::exp(ref[t]) * (ref[t] - lp[t]);
        const auto top = [&](const double* row) { return int(std::max_element(row, row + vocab) - row); };
        const int agree = top(lp) == top(ref) ? 1 : 0;
        step.kl.push_back(kl);
        step.agree.push_back(agree);
        s.totals_.kl_sum += kl;
        s.totals_.agreed += agree;
      }
    }
    report.sessions.push_back(std::move(step));
  }
  forced_done_ += n;
  if (forced_done_ >= forced_.size()) phase_ = Phase::Done;
}

}  // namespace h2o
