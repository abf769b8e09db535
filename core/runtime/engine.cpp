#include "core/runtime/engine.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/runtime/kv_memory_account.h"

namespace h2o {

void EngineOptions::validate() const {
  if (policies.empty()) fail("--policies", "no policy given");
  for (const auto& p : policies) p.validate();
  if (max_new_tokens < 1) fail("--max-new-tokens", "must be >= 1, got " + std::to_string(max_new_tokens));
  if (prefill_chunk < 1) fail("--prefill-chunk", "must be >= 1, got " + std::to_string(prefill_chunk));
  if (forced_chunk < 1) fail("--chunk", "must be >= 1, got " + std::to_string(forced_chunk));
  if (!(sampling.temperature >= 0)) fail("--temperature", "must be >= 0");
  if (!(sampling.top_p > 0 && sampling.top_p <= 1)) fail("--top-p", "must be in (0, 1]");
}

Engine::Engine(std::shared_ptr<const Model> model, std::unique_ptr<Backend> backend,
               std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options)
    : model_(std::move(model)), backend_(std::move(backend)), tokenizer_(std::move(tokenizer)),
      options_(std::move(options)) {
  options_.validate();
  // G and R not given: chosen for this model's head and each policy's budget (SEMANTICS).
  for (PolicyConfig& p : options_.policies) p.shape_kv(model_->config.head_dim());
  if (!tokenizer_) throw Error("engine: no tokenizer (use make_byte_tokenizer for models without one)");
  check_budgets_fit_memory(model_->config, options_.policies);
  template_ = choose_template(*tokenizer_, options_.chat_template);
  stop_ids_ = template_.stop_ids(*tokenizer_);
  for (size_t i = 0; i < options_.policies.size(); ++i) {
    const PolicyConfig& p = options_.policies[i];
    sessions_.push_back(std::make_unique<Session>(p, backend_->new_cache(p), options_.sampling));
    if (!p.evicts() && reference_ < 0) reference_ = int(i);
  }
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

void Engine::queue_turn(Turn turn) {
  if (!forced_.empty() || turns_.empty()) throw Error("a typed prompt needs the MT-Bench stream (not teacher-forced text)");
  if (phase_ == Phase::Done) throw Error("the stream is over: a typed prompt has nothing to join");
  if (turn.text.empty() && turn.ids.empty()) throw Error("the typed prompt is empty");
  queued_.push_back(std::move(turn));
}

void Engine::plant(std::vector<int> ids) {
  if (ids.empty()) throw Error("the needle is empty");
  if (!forced_.empty() || turns_.empty()) throw Error("a needle is planted in the MT-Bench stream (not teacher-forced text)");
  if (phase_ == Phase::Done) throw Error("the stream is over: a needle has nothing to join");
  Turn turn;
  turn.ids = std::move(ids);
  turn.needle = true;
  queued_.push_front(std::move(turn));  // before any typed turn: it goes where the presenter planted it
}

std::vector<std::unique_ptr<SessionCache>> Engine::fork_caches() {
  std::vector<std::unique_ptr<SessionCache>> out;
  for (const auto& s : sessions_) out.push_back(s->stopped_.empty() ? backend_->fork(*s->cache_) : nullptr);
  return out;
}

void Engine::begin_turn() {
  Turn typed;
  typed_ = !queued_.empty();
  if (typed_) {
    typed = std::move(queued_.front());
    queued_.pop_front();
  } else {
    ++turn_;
    if (turn_ >= int(turns_.size())) {
      if (!options_.loop_prompts) {
        phase_ = Phase::Done;
        return;
      }
      turn_ = 0;
    }
  }
  const Turn& turn = typed_ ? typed : turns_[size_t(turn_)];
  needle_turn_ = turn.needle;
  if (!turn.ids.empty()) {
    prompt_ = turn.ids;
  } else {
    // The stream starts with BOS (where the vocabulary adds one) and the
    // template's prefix; later turns continue the same conversation.
    const bool started = std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return !s->stream_.empty(); });
    prompt_.clear();
    if (!started && tokenizer_->adds_bos()) prompt_.push_back(tokenizer_->bos_id());
    const auto ids = template_.encode_turn(*tokenizer_, turn.text, !started);
    prompt_.insert(prompt_.end(), ids.begin(), ids.end());
  }
  for (int t : prompt_)
    if (t < 0 || t >= model_->config.vocab_size)
      fail("prompt", "token id " + std::to_string(t) + " is outside the model's vocabulary (" +
                         std::to_string(model_->config.vocab_size) + ")");
  prompt_done_ = 0;
  phase_ = Phase::Prefill;
}

StepRecord Engine::step(const CaptureSchedule* schedule) {
  const auto t0 = std::chrono::steady_clock::now();
  StepRecord record;
  record.step = step_;
  record.phase = phase_;
  record.prompt_index = typed_ ? -1 : turn_;
  switch (phase_) {
    case Phase::Prefill: step_prefill(record, schedule); break;
    case Phase::Decode: step_decode(record, schedule); break;
    case Phase::Forced: step_forced(record, schedule); break;
    case Phase::Done: return record;
  }
  ++step_;
  if (all_stopped()) phase_ = Phase::Done;
  else if (record.turn_end) begin_turn();
  engine_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record.engine_seconds = engine_seconds_;
  return record;
}

std::vector<int> Engine::live_sessions() const {
  std::vector<int> live;
  for (size_t i = 0; i < sessions_.size(); ++i)
    if (sessions_[i]->stopped_.empty()) live.push_back(int(i));
  return live;
}

Engine::Work Engine::prepare(int index, std::vector<int> fed, const CaptureSchedule* schedule) {
  Work w;
  w.session = index;
  w.fed = std::move(fed);
  if (schedule) w.plan = schedule->plan(step_, *sessions_[size_t(index)]);
  return w;
}

void Engine::stop(Work& w, const std::string& why) {
  Session& s = *sessions_[size_t(w.session)];
  s.stopped_ = why;
  s.answering = false;
  s.pending = -1;
  w.record.stopped = why;
}

void Engine::run(std::vector<Work>& work) {
  using clock = std::chrono::steady_clock;
  // The items point into their Work, which does not move until they have run.
  for (Work& w : work) {
    ForwardItem& item = w.item;
    item.cache = sessions_[size_t(w.session)]->cache_.get();
    item.tokens = w.fed;
    if (w.choose) item.choose = &w.choice, item.chosen = &w.chosen;
    if (w.forced) item.forced = w.forced, item.scores = &w.scores;
    if (!w.plan.empty()) {
      item.capture = &w.plan;
      item.captured = &w.record.attention;
      item.layer_states = &w.record.layer_states;
    }
  }
  const auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  if (!options_.batched) {
    for (Work& w : work) {
      const auto t0 = clock::now();
      try {
        backend_->forward(std::span<ForwardItem>(&w.item, 1));
        w.ms = ms_since(t0);
      } catch (const SessionFailure& f) {
        stop(w, f.what());
      }
    }
    return;
  }
  // Batched: a failure names its item before anything ran; drop it, run the rest.
  std::vector<size_t> left(work.size());
  for (size_t i = 0; i < left.size(); ++i) left[i] = i;
  while (!left.empty()) {
    std::vector<ForwardItem> batch;
    for (size_t i : left) batch.push_back(work[i].item);
    const auto t0 = clock::now();
    try {
      backend_->forward(batch);
    } catch (const SessionFailure& f) {
      stop(work[left[f.item()]], f.what());
      left.erase(left.begin() + long(f.item()));
      continue;
    }
    const double elapsed = ms_since(t0);
    for (size_t i : left) work[i].ms = elapsed;
    break;
  }
}

bool Engine::is_stop(int token) const { return std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end(); }

std::string Engine::text_of(int token, int previous) const {
  if (!tokenizer_ || token < 0) return {};
  return tokenizer_->piece_text(token, previous);
}

void Engine::observe(Work& w) {
  const Session& s = *sessions_[size_t(w.session)];
  SessionRecord& out = w.record;
  out.session = w.session;
  out.fed = w.fed;
  const auto& stream = s.stream();
  if (w.ms >= 0) {
    // Texts of the fed tokens, each after the token before it in the stream.
    const size_t first = stream.size() - std::min(stream.size(), w.fed.size());
    out.position = int64_t(first);
    for (size_t i = 0; i < w.fed.size(); ++i)
      out.fed_text.push_back(text_of(w.fed[i], first + i > 0 ? stream[first + i - 1] : -1));
    out.evictions = s.cache().last_evictions();
  } else {
    out.fed.clear();  // a stopped session was fed nothing
    out.position = int64_t(stream.size());
  }
  out.cached_tokens = s.cache().max_size();
  out.live_bytes = s.cache().live_bytes();
  out.quantized_tokens = s.cache().quantized_tokens();
  out.allocated_bytes = s.cache().allocated_bytes();
  out.step_ms = std::max(w.ms, 0.0);
  out.decode_tokens_per_s = s.totals().decode_tokens_per_s();
  out.prefill_tokens_per_s = s.totals().prefill_tokens_per_s();
}

// Feeds the next chunk of the current turn's prompt to every session. A
// session's first chunk starts with the last token of its previous answer,
// which was chosen but not yet fed.
void Engine::step_prefill(StepRecord& record, const CaptureSchedule* schedule) {
  const bool first_chunk = prompt_done_ == 0;
  record.turn_start = first_chunk;
  const size_t n = std::min(prompt_.size() - prompt_done_, size_t(options_.prefill_chunk));
  const bool last_chunk = prompt_done_ + n == prompt_.size();
  std::vector<Work> work;
  for (int index : live_sessions()) {
    Session& s = *sessions_[size_t(index)];
    std::vector<int> fed;
    if (first_chunk) {
      // The previous answer's last token, not yet fed; after an answer cut
      // short, the template's end of an answer, so every turn starts alike.
      if (s.pending >= 0) fed.push_back(s.pending);
      if (s.answer_cut && turns_[size_t(turn_)].ids.empty()) {
        const auto end = template_.end_of_answer_ids(*tokenizer_);
        fed.insert(fed.end(), end.begin(), end.end());
      }
    }
    const int64_t prompt_begin = int64_t(s.stream_.size() + fed.size());
    fed.insert(fed.end(), prompt_.begin() + long(prompt_done_), prompt_.begin() + long(prompt_done_ + n));
    Work& w = work.emplace_back(prepare(index, std::move(fed), schedule));
    if (needle_turn_ && first_chunk) w.needle_begin = prompt_begin;
    if (last_chunk && !needle_turn_) {
      // The answer's first token comes from the prompt's last row.
      w.choose = true;
      w.choice = s.sampler_.next();
    }
  }
  run(work);
  prompt_done_ += n;

  for (Work& w : work) {
    Session& s = *sessions_[size_t(w.session)];
    if (w.ms >= 0) {
      s.pending = -1;
      if (first_chunk) s.answer_cut = false;  // fed what the last answer owed
      s.stream_.insert(s.stream_.end(), w.fed.begin(), w.fed.end());
      s.totals_.prefilled += int64_t(w.fed.size());
      s.totals_.prefill_seconds += w.ms / 1000.0;
    }
    observe(w);
    if (w.ms >= 0 && w.needle_begin >= 0) {
      w.record.needle_begin = w.needle_begin;
      w.record.needle_end = w.needle_begin + int64_t(prompt_.size());
    }
    if (w.ms >= 0 && last_chunk && needle_turn_) {
      s.answering = s.answer_cut = false;  // a needle is not answered: the next turn follows it
    } else if (w.ms >= 0 && last_chunk) {
      SessionRecord& out = w.record;
      out.token = w.chosen;
      out.text = text_of(w.chosen, s.stream_.back());
      // A stop token ends the answer and is fed like any other (SEMANTICS.md).
      out.eos = is_stop(w.chosen);
      s.generated_in_turn = 1;
      s.totals_.generated += 1;
      s.answering = !out.eos && options_.max_new_tokens > 1;
      s.answer_cut = !out.eos && !s.answering;
      s.pending = w.chosen;
    }
    record.sessions.push_back(std::move(w.record));
  }
  if (last_chunk) {
    const bool any = std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->answering; });
    phase_ = any ? Phase::Decode : Phase::Prefill;
    record.turn_end = !any;
  }
}

// One token for every session still answering.
void Engine::step_decode(StepRecord& record, const CaptureSchedule* schedule) {
  std::vector<Work> work;
  for (size_t i = 0; i < sessions_.size(); ++i) {
    Session& s = *sessions_[i];
    if (!s.answering) continue;
    Work& w = work.emplace_back(prepare(int(i), {s.pending}, schedule));
    w.choose = true;
    w.choice = s.sampler_.next();
  }
  run(work);

  for (Work& w : work) {
    Session& s = *sessions_[size_t(w.session)];
    if (w.ms >= 0) {
      s.stream_.push_back(s.pending);
      s.totals_.decode_seconds += w.ms / 1000.0;
      s.totals_.decoded += 1;
    }
    observe(w);
    if (w.ms >= 0) {
      SessionRecord& out = w.record;
      out.token = w.chosen;
      out.text = text_of(w.chosen, s.stream_.back());
      out.eos = is_stop(w.chosen);
      s.totals_.generated += 1;
      ++s.generated_in_turn;
      s.pending = w.chosen;
      s.answering = !out.eos && s.generated_in_turn < options_.max_new_tokens;
      s.answer_cut = !out.eos && !s.answering;
    }
    record.sessions.push_back(std::move(w.record));
  }
  if (std::none_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->answering; }))
    record.turn_end = true;
}

// Teacher forcing: the same tokens for every session; each row's prediction of
// the next token is scored, and compared with the full cache's.
void Engine::step_forced(StepRecord& record, const CaptureSchedule* schedule) {
  const size_t n = std::min(forced_.size() - forced_done_, size_t(options_.forced_chunk));
  const std::vector<int> fed(forced_.begin() + long(forced_done_), forced_.begin() + long(forced_done_ + n));
  const size_t scored = std::min(n, forced_.size() - forced_done_ - 1);  // rows with a next token
  const std::span<const int> next(forced_.data() + forced_done_ + 1, scored);
  std::vector<int> live = live_sessions();
  const bool reference_live = std::find(live.begin(), live.end(), reference_) != live.end();
  // The reference runs first, so that its rows of this step are there for the others.
  if (reference_live) std::stable_partition(live.begin(), live.end(), [&](int i) { return i == reference_; });
  ForcedTargets targets{next, reference_live ? sessions_[size_t(reference_)]->cache_.get() : nullptr};
  std::vector<Work> work;
  for (int index : live) {
    Work& w = work.emplace_back(prepare(index, fed, schedule));
    w.forced = &targets;
  }
  run(work);

  std::sort(work.begin(), work.end(), [](const Work& a, const Work& b) { return a.session < b.session; });
  for (Work& w : work) {
    Session& s = *sessions_[size_t(w.session)];
    if (w.ms >= 0) {
      s.stream_.insert(s.stream_.end(), fed.begin(), fed.end());
      s.totals_.prefilled += int64_t(n);
      s.totals_.prefill_seconds += w.ms / 1000.0;
    }
    observe(w);
    if (w.ms >= 0) {
      SessionRecord& out = w.record;
      out.nll = std::move(w.scores.nll);
      out.kl = std::move(w.scores.kl);
      out.agree = std::move(w.scores.agree);
      for (double v : out.nll) s.totals_.nll_sum += v, s.totals_.scored += 1;
      for (double v : out.kl) s.totals_.kl_sum += v;
      for (int a : out.agree) s.totals_.agreed += a;
    }
    record.sessions.push_back(std::move(w.record));
  }
  forced_done_ += n;
  if (forced_done_ >= forced_.size()) phase_ = Phase::Done;
}

}  // namespace h2o
