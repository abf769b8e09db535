#include "core/recording/step_line.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <simdjson.h>

#include "core/base/error.h"
#include "core/recording/step_payload.h"

namespace h2o {
namespace od = simdjson::ondemand;

namespace {

// ---- values -------------------------------------------------------------------------

int64_t as_int64(od::value v) { return int64_t(v.get_int64()); }

// A whole number of type T; one that does not fit T is an error, not wrapped.
template <typename T>
T as_whole(od::value v) {
  const int64_t x = as_int64(v);
  if (!std::in_range<T>(x)) throw Error("number " + std::to_string(x) + " out of range");
  return T(x);
}
int as_int(od::value v) { return as_whole<int>(v); }

// A real number of type T (a float beyond float's range is an error, not
// undefined behaviour). `null_is_nan`: where the writer writes NaN, as null
// (the top-k shares of a capture that asked for none), it reads back as NaN.
template <typename T>
T as_real(od::value v, bool null_is_nan = false) {
  if (null_is_nan && v.is_null()) return T(NAN);
  const double x = v.get_double();
  if (std::abs(x) > double(std::numeric_limits<T>::max())) throw Error("number out of range");
  return T(x);
}
double as_double(od::value v) { return as_real<double>(v); }

template <typename T>
std::vector<T> numbers(od::value v, bool null_is_nan = false) {
  std::vector<T> out;
  for (od::value x : v.get_array()) {
    if constexpr (std::is_floating_point_v<T>) out.push_back(as_real<T>(x, null_is_nan));
    else out.push_back(as_whole<T>(x));
  }
  return out;
}

template <typename T>
std::vector<std::vector<T>> number_rows(od::value v) {
  std::vector<std::vector<T>> out;
  for (od::value row : v.get_array()) out.push_back(numbers<T>(row));
  return out;
}

// A text as json_text.h writes it: a string, or an array of byte values when not valid UTF-8.
std::string text(od::value v) {
  if (v.type() == od::json_type::string) return std::string(std::string_view(v.get_string()));
  std::string out;
  for (od::value b : v.get_array()) out += char(as_whole<uint8_t>(b));
  return out;
}

// Fields an object must have: each one seen sets its bit.
struct Required {
  const char* const* names;
  unsigned seen = 0, count;
  void check() const {
    for (unsigned i = 0; i < count; ++i)
      if (!(seen & (1u << i))) throw Error(std::string("missing \"") + names[i] + "\"");
  }
};

// ---- captures and states ----------------------------------------------------------------

AttentionCapture capture(od::value v, StepDetail detail) {
  static const char* const kNeeds[] = {"layer", "rows", "query", "keys", "probs", "top_share"};
  Required needs{kNeeds, 0, 6};
  AttentionCapture c;
  const bool whole = detail == StepDetail::Full;
  for (auto field : v.get_object()) {
    const std::string_view key = field.unescaped_key();
    od::value x = field.value();
    if (key == "layer") c.layer = as_int(x), needs.seen |= 1;
    else if (key == "head") c.head = as_int(x);
    else if (key == "rows") c.rows = as_int(x), needs.seen |= 2;
    // Skimmed, the positions and probabilities are skipped unread.
    else if (key == "query") {
      needs.seen |= 4;
      if (whole) c.query_positions = numbers<int32_t>(x);
    } else if (key == "keys") {
      needs.seen |= 8;
      if (whole) c.key_positions = number_rows<int32_t>(x);
    } else if (key == "probs") {
      needs.seen |= 16;
      if (whole) c.probs = number_rows<float>(x);
    }
    else if (key == "top_share") c.top_share = numbers<float>(x, true), needs.seen |= 32;
  }
  needs.check();
  return c;
}

// A layer state; `scores_key`: "scores" (version 2) or "values" (version 1's one state).
LayerState layer_state(od::value v, std::string_view scores_key) {
  static const char* const kNeeds[] = {"layer", "positions", "scores"};
  Required needs{kNeeds, 0, 3};
  LayerState s;
  for (auto field : v.get_object()) {
    const std::string_view key = field.unescaped_key();
    od::value x = field.value();
    if (key == "layer") s.layer = as_int(x), needs.seen |= 1;
    else if (key == "positions") s.positions = number_rows<int32_t>(x), needs.seen |= 2;
    else if (key == scores_key) s.scores = number_rows<float>(x), needs.seen |= 4;
  }
  needs.check();
  return s;
}

void evictions(od::value v, int version, EvictionSummary& e) {
  const auto events = [&](od::value list) {
    for (od::value triple : list.get_array()) {
      const std::vector<int32_t> t = numbers<int32_t>(triple);
      if (t.size() != 3) throw Error("an eviction is not [layer, kv_head, position]");
      e.by_head.push_back({t[0], t[1], t[2]});
    }
  };
  // Version 1: one list of every (layer, KV head, position).
  if (version < 2) return events(v);
  for (auto field : v.get_object()) {
    const std::string_view key = field.unescaped_key();
    if (key == "all") e.everywhere = numbers<int32_t>(field.value());
    else if (key == "heads") events(field.value());
  }
}

// ---- sessions and steps ------------------------------------------------------------------

// The fields every session has, in the order of their bits.
const char* const kSessionNeeds[] = {"session", "fed", "fed_text", "token", "text", "eos", "cached_tokens",
                                     "live_bytes", "allocated_bytes", "step_ms", "tok_s", "nll", "kl", "agree",
                                     "evictions"};

// The session's numbers and tokens; false when `key` is not one of them.
bool session_scalar(std::string_view key, od::value x, SessionRecord& s, Required& needs) {
  const auto need = [&](unsigned bit) { needs.seen |= 1u << bit; };
  if (key == "session") s.session = as_int(x), need(0);
  else if (key == "fed") s.fed = numbers<int>(x), need(1);
  else if (key == "position") s.position = as_int64(x);
  else if (key == "fed_text") {
    for (od::value t : x.get_array()) s.fed_text.push_back(text(t));
    need(2);
  } else if (key == "token") s.token = as_int(x), need(3);
  else if (key == "text") s.text = text(x), need(4);
  else if (key == "eos") s.eos = bool(x.get_bool()), need(5);
  else if (key == "cached_tokens") s.cached_tokens = as_int(x), need(6);
  else if (key == "quantized_tokens") s.quantized_tokens = as_int(x);
  else if (key == "live_bytes") s.live_bytes = as_int64(x), need(7);
  else if (key == "allocated_bytes") s.allocated_bytes = as_int64(x), need(8);
  else if (key == "step_ms") s.step_ms = as_double(x), need(9);
  else if (key == "tok_s") s.decode_tokens_per_s = as_double(x), need(10);
  else if (key == "tok_s_prefill") s.prefill_tokens_per_s = as_double(x);
  else if (key == "nll") s.nll = numbers<double>(x), need(11);
  else if (key == "kl") s.kl = numbers<double>(x), need(12);
  else if (key == "agree") s.agree = numbers<int>(x), need(13);
  else if (key == "stopped") s.stopped = std::string(std::string_view(x.get_string()));
  else if (key == "needle") {
    const std::vector<int64_t> span = numbers<int64_t>(x);
    if (span.size() != 2) throw Error("a session's \"needle\" is not [begin, end]");
    s.needle_begin = span[0], s.needle_end = span[1];
  } else return false;
  return true;
}

// A step's payloads after its line (version 4), handed to its sessions in turn.
struct Tail {
  std::string_view bytes;  // everything after the line
  int64_t size = -1;       // what the line's "tail" says (-1: no tail)
  size_t used = 0;
  std::string_view take(int64_t n) {
    if (size < 0) throw Error("\"payload_bytes\" without a \"tail\" before it");
    if (n <= 0 || n > size - int64_t(used)) throw Error("\"payload_bytes\" beyond the step's tail");
    const std::string_view out = bytes.substr(used, size_t(n));
    used += size_t(n);
    return out;
  }
};

// What `s`'s payload may declare: the model's shape, and per KV head at most
// the tokens its policy lets a head hold in the step (budget + slack before
// the cut, plus what the step fed), or, for a cache that never cuts, every
// token of the stream so far.
PayloadBounds payload_bounds(const SessionRecord& s, const LineShape* shape) {
  PayloadBounds b;
  b.rows = s.fed.size();
  if (!shape) return b;
  if (s.session < 0 || size_t(s.session) >= shape->rules.size())
    throw Error("session " + std::to_string(s.session) + ": no such policy in the header");
  b.layers = size_t(shape->layers), b.heads = size_t(shape->heads), b.kv_heads = size_t(shape->kv_heads);
  const EvictionRule& rule = shape->rules[size_t(s.session)];
  if (rule.evicts()) b.keys = size_t(rule.budget) + size_t(rule.slack) + b.rows;
  else if (s.position >= 0) b.keys = size_t(s.position) + b.rows;
  return b;
}

SessionRecord session(od::value v, int version, StepDetail detail, Tail& tail, const LineShape* shape) {
  Required needs{kSessionNeeds, 0, 15};
  SessionRecord s;
  s.position = -1;  // version 1 did not record it
  // The payload is read after the session's other fields, which bound what it may declare.
  std::optional<std::string_view> frame;
  std::string frame_from_text;
  for (auto field : v.get_object()) {
    const std::string_view key = field.unescaped_key();
    od::value x = field.value();
    if (session_scalar(key, x, s, needs)) continue;
    if (key == "evictions") {
      evictions(x, version, s.evictions);
      needs.seen |= 1u << 14;
    } else if (key == "payload_bytes") {
      // Version 4: evictions by head, captures and states in one compressed payload, after the line.
      frame = tail.take(as_int64(x));
    } else if (key == "payload") {
      // Version 3: the same payload as base64 text.
      frame_from_text = payload_from_base64(std::string_view(x.get_string()));
      frame = frame_from_text;
    } else if (key == "attention") {
      // Version 1 held one capture, version 2 a list.
      if (version < 2) s.attention.push_back(capture(x, detail));
      else
        for (od::value a : x.get_array()) s.attention.push_back(capture(a, detail));
    } else if (key == "states" || (version < 2 && key == "scores")) {
      if (version < 2) {
        s.layer_states.push_back(layer_state(x, "values"));
        continue;
      }
      for (od::value st : x.get_array()) {
        // A skim keeps the first state only (the watched layer's); the rest are skipped unread.
        s.layer_states.push_back(layer_state(st, "scores"));
        if (detail == StepDetail::Skim) break;
      }
    }
  }
  needs.check();
  if (frame) {
    const PayloadBounds bounds = payload_bounds(s, shape);
    try {
      decode_session_payload(*frame, s, detail == StepDetail::Skim, bounds);
    } catch (const Error& e) {
      throw Error("session " + std::to_string(s.session) + ": " + e.what());
    }
  }
  return s;
}

NeedlePlant needle_plant(od::value v) {
  NeedlePlant n;
  for (auto field : v.get_object()) {
    const std::string_view key = field.unescaped_key();
    od::value x = field.value();
    if (key == "text") n.text = text(x);
    else if (key == "question") n.question = text(x);
    else if (key == "answer") n.answer = text(x);
    else if (key == "question_ids") n.question_ids = numbers<int>(x);
    else if (key == "answer_ids") n.answer_ids = numbers<int>(x);
  }
  return n;
}

std::vector<AskAnswer> ask_answers(od::value v) {
  std::vector<AskAnswer> out;
  for (od::value pane : v.get_array()) {
    AskAnswer& a = out.emplace_back();
    for (auto field : pane.get_object()) {
      const std::string_view key = field.unescaped_key();
      od::value x = field.value();
      if (key == "answer_nll") a.answer_nll = as_real<double>(x, true);
      else if (key == "answer_tokens") a.answer_tokens = as_int(x);
      else if (key == "exact") a.exact = bool(x.get_bool());
      else if (key == "survival_answer") a.survival_answer = as_real<double>(x, true);
      else if (key == "said") a.said = text(x);
    }
  }
  return out;
}

StepRecord step(od::object o, int version, StepDetail detail, Tail& tail, const LineShape* shape) {
  static const char* const kNeeds[] = {"step", "phase", "prompt", "turn_start", "turn_end", "engine_s", "sessions"};
  Required needs{kNeeds, 0, 7};
  StepRecord r;
  for (auto field : o) {
    const std::string_view key = field.unescaped_key();
    od::value x = field.value();
    if (key == "step") r.step = as_int64(x), needs.seen |= 1;
    else if (key == "phase") r.phase = phase_from_name(std::string(std::string_view(x.get_string()))), needs.seen |= 2;
    else if (key == "prompt") r.prompt_index = as_int(x), needs.seen |= 4;
    else if (key == "turn_start") r.turn_start = bool(x.get_bool()), needs.seen |= 8;
    else if (key == "turn_end") r.turn_end = bool(x.get_bool()), needs.seen |= 16;
    else if (key == "engine_s") r.engine_seconds = as_double(x), needs.seen |= 32;
    else if (key == "thinned") r.thinned = bool(x.get_bool());
    else if (key == "needle") r.needle = needle_plant(x);
    else if (key == "asked") r.asked = ask_answers(x);
    else if (key == "tail") {
      tail.size = as_int64(x);
      if (tail.size <= 0 || tail.size > int64_t(tail.bytes.size())) throw Error("the step's \"tail\" is not the bytes after its line");
    } else if (key == "sessions") {
      for (od::value s : x.get_array()) r.sessions.push_back(session(s, version, detail, tail, shape));
      needs.seen |= 64;
    }
  }
  needs.check();
  return r;
}

}  // namespace

RecordingLine parse_recording_line(std::string& line, int version, int64_t skim_below, const LineShape* shape) {
  // One parser per thread: a reader parses lines on every core.
  thread_local od::parser parser;
  // The line ends at its first newline (JSON text has none); a version-4 step's payloads follow.
  const size_t json_end = std::min(line.find('\n'), line.size());
  Tail tail;
  try {
    line.reserve(line.size() + simdjson::SIMDJSON_PADDING);  // before any view of it is taken
    tail.bytes = std::string_view(line).substr(std::min(json_end + 1, line.size()));
    od::document doc = parser.iterate(simdjson::padded_string_view(line.data(), json_end, line.capacity()));
    od::object o = doc.get_object();
    RecordingLine out;
    // The step number decides how much to read; the fields come in name order, so look it up first.
    // (After any other error the parser gives up on the document: it must not be read on.)
    const auto find = [&](std::string_view key, od::value& at) {
      const simdjson::error_code e = o.find_field_unordered(key).get(at);
      if (e != simdjson::SUCCESS && e != simdjson::NO_SUCH_FIELD) throw simdjson::simdjson_error(e);
      return e == simdjson::SUCCESS;
    };
    int64_t number = std::numeric_limits<int64_t>::max();
    od::value at;
    if (find("step", at)) {
      number = as_int64(at);
    } else if (find("totals", at)) {
      out.totals = true;
      return out;
    }
    o.reset();
    out.skimmed = number < skim_below;
    out.step = step(o, version, out.skimmed ? StepDetail::Skim : StepDetail::Full, tail, shape);
    // The object is read to its end: anything but blanks after it is another value (simdjson
    // 3.0 has no at_end(); a location inside the line says there is more).
    const char* more = nullptr;
    if (doc.current_location().get(more) == simdjson::SUCCESS) throw Error("text after the step's object");
    const size_t tail_size = size_t(std::max<int64_t>(tail.size, 0));
    if (tail.used != tail_size) throw Error("the step's tail holds bytes no session's payload takes");
    if (tail.bytes.substr(tail_size).find_first_not_of(" \t\r\n") != std::string_view::npos)
      throw Error("text after the step's payloads");
    return out;
  } catch (const simdjson::simdjson_error& e) {
    throw Error(std::string("invalid JSON: ") + e.what());
  }
}

StepRecord parse_step_line(std::string& line, int version, const LineShape* shape) {
  RecordingLine parsed = parse_recording_line(line, version, -1, shape);
  if (!parsed.step) throw Error("not a step");
  return std::move(*parsed.step);
}

}  // namespace h2o
