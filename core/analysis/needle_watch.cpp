#include "core/analysis/needle_watch.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/base/error.h"
#include "core/base/packed_bytes.h"

namespace h2o {

void NeedleWatch::ingest(const StepRecord& r) {
  if (r.needle) {
    // A new needle replaces the last: its spans and its asks start again.
    plant_ = r.needle;
    plant_step_ = r.step;
    spans_.assign(spans_.size(), Span{});
    asks_.clear();
  }
  for (const SessionRecord& s : r.sessions)
    if (s.needle_begin >= 0 && size_t(s.session) < spans_.size()) spans_[size_t(s.session)] = {s.needle_begin, s.needle_end, r.step};
  if (!r.asked.empty() && plant_) asks_.push_back({r.step, r.asked});
}

std::pair<int64_t, int64_t> NeedleWatch::span(size_t pane, int64_t step) const {
  if (pane >= spans_.size() || spans_[pane].step < 0 || spans_[pane].step > step) return {-1, -1};
  return {spans_[pane].begin, spans_[pane].end};
}

NeedlePane needle_pane(const PolicyHistory& history, int layers, int kv_heads, int64_t begin, int64_t end,
                       int64_t fed_step, int64_t step) {
  NeedlePane pane;
  pane.begin = begin;
  pane.end = end = std::min(end, history.length());
  pane.fed_step = fed_step;
  const int64_t n = end - begin;
  if (n <= 0 || fed_step > step) return pane;
  std::vector<int32_t> gone;  // eviction steps up to `step`, of every (layer, KV head, position)
  double sum = 0, best = -1;
  for (int l = 0; l < layers; ++l) {
    double in_layer = 0;
    int holding = 0;
    for (int g = 0; g < kv_heads; ++g) {
      int64_t held = 0;
      for (int64_t p = begin; p < end; ++p) {
        const int32_t e = history.evicted_at(l, g, p);
        if (e >= 0 && e <= step) gone.push_back(e);
        else ++held;
      }
      pane.held.push_back(float(double(held) / double(n)));
      sum += double(held) / double(n);
      in_layer += double(held);
      holding += held > 0 ? 1 : 0;
    }
    pane.heads_holding += holding;
    if (in_layer > best) best = in_layer, pane.best_layer = l, pane.best_layer_heads = holding;
  }
  const double all = double(n) * layers * kv_heads;
  pane.survival = sum / (layers * kv_heads);
  std::sort(gone.begin(), gone.end());
  pane.curve.x.push_back(0);
  pane.curve.y.push_back(1);
  for (size_t i = 0; i < gone.size(); ++i) {
    if (i + 1 < gone.size() && gone[i + 1] == gone[i]) continue;  // one point a step
    pane.curve.x.push_back(double(gone[i] - fed_step));
    pane.curve.y.push_back(1 - double(i + 1) / all);
  }
  pane.curve.x.push_back(double(step - fed_step));
  pane.curve.y.push_back(pane.survival);
  if (double(gone.size()) == all) {
    pane.lost_step = gone.back();
    pane.lost_after = history.length_at(pane.lost_step) - end;
  }
  return pane;
}

NeedleSnapshot NeedleWatch::snapshot(const std::vector<PolicyHistory>& histories, int layers, int kv_heads,
                                     int64_t step) const {
  NeedleSnapshot out;
  if (!plant_ || plant_step_ > step) return out;
  out.planted = true;
  out.text = plant_->text;
  out.question = plant_->question;
  out.answer = plant_->answer;
  out.layers = layers;
  out.kv_heads = kv_heads;
  for (size_t i = 0; i < histories.size() && i < spans_.size(); ++i) {
    const Span& s = spans_[i];
    NeedlePane pane = s.step >= 0 && s.step <= step
                          ? needle_pane(histories[i], layers, kv_heads, s.begin, s.end, s.step, step)
                          : NeedlePane{};
    for (const Ask& ask : asks_) {
      if (ask.step > step || i >= ask.panes.size() || pane.begin < 0) continue;
      const AskAnswer& a = ask.panes[i];
      const NeedlePane then = needle_pane(histories[i], layers, kv_heads, s.begin, s.end, s.step, ask.step);
      pane.asks.push_back({ask.step, histories[i].length_at(ask.step) - pane.end, then.survival, a.survival_answer,
                           a.answer_nll, a.exact, a.said});
    }
    out.panes.push_back(std::move(pane));
  }
  return out;
}

// ---- checkpoints ---------------------------------------------------------------------

void NeedleWatch::save(PackedWriter& w) const {
  w.byte(plant_ ? 1 : 0);
  if (!plant_) return;
  for (const std::string* t : {&plant_->text, &plant_->question, &plant_->answer}) w.text(*t);
  w.array(plant_->question_ids);
  w.array(plant_->answer_ids);
  w.signed_varint(plant_step_);
  w.varint(spans_.size());
  for (const Span& s : spans_) {
    w.signed_varint(s.begin);
    w.signed_varint(s.end);
    w.signed_varint(s.step);
  }
  w.varint(asks_.size());
  for (const Ask& ask : asks_) {
    w.signed_varint(ask.step);
    for (const AskAnswer& a : ask.panes) {
      w.f64(a.answer_nll);
      w.varint(uint64_t(a.answer_tokens));
      w.byte(a.exact ? 1 : 0);
      w.f64(a.survival_answer);
      w.text(a.said);
    }
  }
}

NeedleWatch NeedleWatch::load(PackedReader& r, size_t panes, int64_t steps_end) {
  NeedleWatch watch(panes);
  if (r.byte() == 0) return watch;
  NeedlePlant plant;
  for (std::string* t : {&plant.text, &plant.question, &plant.answer}) *t = r.text();
  plant.question_ids = r.array<int>();
  plant.answer_ids = r.array<int>();
  watch.plant_ = std::move(plant);
  watch.plant_step_ = r.within(0, steps_end, "the needle's step");
  if (r.count() != panes) r.fail("a needle of other panes than its recording's");
  for (Span& s : watch.spans_) {
    s.begin = r.within(-1, INT32_MAX, "a needle's position");
    s.end = r.within(s.begin, INT32_MAX, "a needle's end");
    s.step = r.within(-1, steps_end, "a needle's step");
  }
  for (size_t n = r.count(); n > 0; --n) {
    Ask& ask = watch.asks_.emplace_back();
    ask.step = r.within(0, steps_end, "an ask's step");
    ask.panes.resize(panes);
    for (AskAnswer& a : ask.panes) {
      a.answer_nll = r.f64();
      a.answer_tokens = int(r.within(0, INT32_MAX, "an ask's answer tokens"));
      a.exact = r.byte() != 0;
      a.survival_answer = r.f64();
      a.said = r.text();
    }
  }
  return watch;
}

namespace {

std::string percent(double fraction) { return std::to_string(std::lround(fraction * 100)) + "%"; }

std::string number(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

}  // namespace

std::string needle_words(const std::string& who, const NeedlePane& pane, int kv_heads) {
  if (pane.begin < 0) return who + ": the needle goes in when the current turn ends.";
  const std::string heads = std::to_string(pane.held.size());
  if (pane.lost_step >= 0)
    return who + " dropped the needle at step " + std::to_string(pane.lost_step) + ", " +
           std::to_string(pane.lost_after) + " tokens after it.";
  if (pane.survival >= 1.0) return who + " holds all of the needle, in every one of its " + heads + " KV heads.";
  return who + " holds " + percent(pane.survival) + " of the needle: " + std::to_string(pane.heads_holding) + " of its " +
         heads + " KV heads keep some of it, " + std::to_string(pane.best_layer_heads) + " of " + std::to_string(kv_heads) +
         " in layer " + std::to_string(pane.best_layer) + ".";
}

std::string ask_words(const NeedlePane& pane) {
  if (pane.asks.empty()) return {};
  const NeedleAskPoint& a = pane.asks.back();
  const std::string when = "Asked after step " + std::to_string(a.step);
  if (!std::isfinite(a.answer_nll)) return when + ": the pane had stopped.";
  return when + ", " + std::to_string(a.distance) + " tokens after the needle (" + percent(a.survival_question) +
         " of it held): answer " + (a.exact ? "recalled exactly" : "not recalled") + " (" + number(a.answer_nll, 2) +
         " nats); says \u201c" + a.said + "\u201d.";
}

std::vector<std::string> needle_report_lines(const NeedleSnapshot& n, const std::vector<PolicyConfig>& policies) {
  if (!n.planted) return {};
  std::vector<std::string> lines = {"Needle \u201c" + n.text + "\u201d; asked as \u201c" + n.question + "\u201d \u2192 \u201c" +
                                    n.answer + "\u201d."};
  for (size_t i = 0; i < n.panes.size() && i < policies.size(); ++i) {
    std::string line = needle_words(std::string(policies[i].unit().title), n.panes[i], n.kv_heads);
    if (const std::string ask = ask_words(n.panes[i]); !ask.empty()) line += " " + ask;
    lines.push_back(line);
  }
  return lines;
}

std::optional<NeedleQuestion> question_of_needle(const std::string& needle) {
  const size_t is = needle.find(" is ");
  if (is == std::string::npos || is == 0) return std::nullopt;
  std::string subject = needle.substr(0, is), value = needle.substr(is + 4);
  while (!value.empty() && (value.back() == '.' || value.back() == '!' || std::isspace(uint8_t(value.back()))))
    value.pop_back();
  if (value.empty()) return std::nullopt;
  std::string lowered = subject;
  if (lowered.size() > 1 && std::isupper(uint8_t(lowered[0])) && std::islower(uint8_t(lowered[1])))
    lowered[0] = char(std::tolower(uint8_t(lowered[0])));
  return NeedleQuestion{"What is " + lowered + "? " + subject + " is", value};
}

}  // namespace h2o
