#include "core/studio/needle_source.h"

#include <cmath>

#include "core/analysis/needle_watch.h"
#include "core/base/error.h"
#include "core/base/stopwatch.h"
#include "core/needle/needle_answer.h"

namespace h2o {

std::string NeedleSource::plant(const std::string& text, std::string question, std::string answer) {
  if (text.empty()) fail("--needle", "is empty: plant a sentence, e.g. \"The secret word is Bethlehem.\"");
  if (question.empty() != answer.empty() || question.empty()) {
    const std::optional<NeedleQuestion> asked = question_of_needle(text);
    if (question.empty() && asked) question = asked->question;
    if (answer.empty() && asked) answer = asked->answer;
  }
  if (question.empty() || answer.empty())
    fail("--needle-question", "the needle is not of the form \"the X is Y\": give the question and the answer");
  const Tokenizer& tokenizer = *engine_.tokenizer();
  NeedlePlant plant{text, question, answer, tokenizer.encode(question), tokenizer.encode(answer)};
  if (plant.question_ids.empty() || plant.answer_ids.empty())
    fail("--needle-question", "the question or the answer encodes to no tokens");
  engine_.plant(tokenizer.encode(text));
  unfed_ = std::move(plant);
  return "Planted: “" + text + "” goes into the stream when the current turn ends; Ask: “" + question + "” → “" +
         answer + "”";
}

void NeedleSource::ask_after_next_step() {
  if (!plant_ && !unfed_) throw Error("plant a needle first: an ask asks for it");
  ask_next_ = true;
}

std::optional<StepRecord> NeedleSource::next() {
  std::optional<StepRecord> record = inner_.next();
  if (!record) return record;
  begin_.resize(engine_.sessions().size(), -1);
  end_.resize(engine_.sessions().size(), -1);
  bool fed = false;
  for (const SessionRecord& s : record->sessions)
    if (s.needle_begin >= 0) {
      begin_[size_t(s.session)] = s.needle_begin, end_[size_t(s.session)] = s.needle_end;
      fed = true;
    }
  if (fed && unfed_) {
    record->needle = unfed_;
    plant_ = std::move(unfed_);
    unfed_.reset();
    fed_step_ = record->step;
  }
  const bool due = every_ > 0 && fed_step_ >= 0 && record->step > fed_step_ && (record->step - fed_step_) % every_ == 0;
  if (plant_ && fed_step_ >= 0 && (ask_next_ || due)) {
    record->asked = ask(record->step);
    ask_next_ = false;
  }
  return record;
}

std::vector<AskAnswer> NeedleSource::ask(int64_t) {
  const Stopwatch clock;
  std::vector<std::unique_ptr<SessionCache>> forks = engine_.fork_caches();
  ask_kv_bytes_ = 0;
  for (const auto& f : forks) ask_kv_bytes_ += f ? f->allocated_bytes() : 0;
  std::vector<SessionCache*> live;
  std::vector<NeedleSpan> spans;
  for (size_t i = 0; i < forks.size(); ++i)
    if (forks[i] && begin_[i] >= 0) live.push_back(forks[i].get()), spans.push_back({begin_[i], end_[i]});
  CacheFeed feed(engine_.backend(), engine_.options().prefill_chunk, engine_.options().batched);
  const std::vector<Answered> answered =
      answer_question(feed, live, plant_->question_ids, plant_->answer_ids, spans, kAskGreedyTokens);
  std::vector<AskAnswer> out(forks.size());
  const Tokenizer& tokenizer = *engine_.tokenizer();
  for (size_t i = 0, k = 0; i < forks.size(); ++i) {
    if (!forks[i] || begin_[i] < 0) continue;
    const Answered& a = answered[k++];
    AskAnswer& o = out[i];
    o.answer_nll = a.recall.nll;
    o.answer_tokens = a.recall.tokens;
    o.exact = a.recall.exact;
    o.survival_answer = survival_fraction(a.held_answer, end_[i] - begin_[i]);
    int previous = -1;
    for (int t : a.greedy) o.said += tokenizer.piece_text(t, previous), previous = t;
  }
  ++asks_;
  ask_s_ += clock.seconds();
  return out;
}

}  // namespace h2o
