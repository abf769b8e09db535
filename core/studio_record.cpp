#include "studio_record.h"

#include <fstream>

#include "analytics.h"
#include "error.h"
#include "run_log.h"

namespace h2o {
using nlohmann::json;

// ---- text -------------------------------------------------------------------

static bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || i + size_t(extra) >= s.size()) return false;
    for (int k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += size_t(extra) + 1;
  }
  return true;
}

json text_json(const std::string& text) {
  if (valid_utf8(text)) return text;
  json bytes = json::array();
  for (char c : text) bytes.push_back(int(static_cast<unsigned char>(c)));
  return bytes;
}

std::string text_from_json(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  std::string out;
  for (const auto& b : j) out += char(b.get<int>());
  return out;
}

// ---- building records ---------------------------------------------------------

RecordingHeader make_header(const Engine& engine, const json& manifest, const std::string& mode) {
  RecordingHeader h;
  h.manifest = manifest;
  h.mode = mode;
  const ModelConfig& c = engine.model().config;
  h.layers = c.n_layers;
  h.heads = c.n_heads;
  h.kv_heads = c.n_kv_heads;
  const std::string& path = engine.model().path;
  h.title = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const auto& s : engine.sessions()) h.policies.push_back(s->policy());
  return h;
}

// Scores every step while the captured layer is small, less often as it grows.
static bool scores_due(int64_t step, int64_t held) { return step % (1 + held / 1024) == 0; }

StepRecord make_step_record(const Engine& engine, const StepReport& report, double engine_seconds) {
  StepRecord r;
  r.step = report.step;
  r.phase = report.phase;
  r.prompt_index = report.prompt_index;
  r.turn_start = report.turn_start;
  r.turn_end = report.turn_end;
  r.engine_seconds = engine_seconds;
  const Tokenizer* tokenizer = engine.tokenizer();
  for (const SessionStep& s : report.sessions) {
    const Session& session = *engine.sessions()[size_t(s.session)];
    SessionRecord out;
    out.session = s.session;
    out.fed = s.fed;
    const auto& stream = session.stream();
    const size_t first = stream.size() - std::min(stream.size(), s.fed.size());
    for (size_t i = 0; i < s.fed.size(); ++i) {
      const int previous = first + i > 0 ? stream[first + i - 1] : -1;
      out.fed_text.push_back(tokenizer ? tokenizer->piece_text(s.fed[i], previous) : std::to_string(s.fed[i]));
    }
    out.token = s.token;
    out.text = s.text;
    out.eos = s.eos;
    out.cached_tokens = s.cached_tokens;
    out.live_bytes = s.live_bytes;
    out.allocated_bytes = s.allocated_bytes;
    out.step_ms = s.step_ms;
    out.decode_tokens_per_s = s.decode_tokens_per_s;
    out.evictions = s.evictions;
    out.nll = s.nll;
    out.kl = s.kl;
    out.agree = s.agree;
    out.stopped = s.error;
    if (s.attention) {
      out.top_share = top_k_share(*s.attention, kSparsityTopK);
      out.attention = trim_capture(*s.attention, kRecordedKeys, kRecordedFirstKeys);
      const SessionCache& cache = session.cache();
      const int layer = s.attention->layer;
      int64_t held = 0;
      for (int h = 0; h < cache.kv_heads(); ++h) held += cache.size(layer, h);
      if (scores_due(report.step, held)) {
        RecordedScores scores;
        scores.layer = layer;
        for (int h = 0; h < cache.kv_heads(); ++h) {
          scores.positions.push_back(cache.positions(layer, h));
          scores.values.push_back(cache.scores(layer, h));
        }
        out.scores = std::move(scores);
      }
    }
    r.sessions.push_back(std::move(out));
  }
  return r;
}

StepReport to_step_report(const StepRecord& record) {
  StepReport report;
  report.step = record.step;
  report.phase = record.phase;
  report.prompt_index = record.prompt_index;
  report.turn_start = record.turn_start;
  report.turn_end = record.turn_end;
  for (const SessionRecord& s : record.sessions) {
    SessionStep out;
    out.session = s.session;
    out.fed = s.fed;
    out.token = s.token;
    out.text = s.text;
    out.eos = s.eos;
    out.cached_tokens = s.cached_tokens;
    out.live_bytes = s.live_bytes;
    out.allocated_bytes = s.allocated_bytes;
    out.step_ms = s.step_ms;
    out.decode_tokens_per_s = s.decode_tokens_per_s;
    out.evictions = s.evictions;
    out.nll = s.nll;
    out.kl = s.kl;
    out.error = s.stopped;
    out.agree = s.agree;
    report.sessions.push_back(std::move(out));
  }
  return report;
}

// ---- JSON ---------------------------------------------------------------------

static json policy_json(const PolicyConfig& p) {
  return {{"kind", p.kind_name()}, {"sinks", p.sinks},   {"window", p.window}, {"heavy", p.heavy},
          {"recent", p.recent},    {"slack", p.slack},   {"rolling", p.rolling}};
}

static PolicyConfig policy_from_json(const json& j) {
  PolicyConfig p;
  p.kind = parse_policy_kind(j.at("kind").get<std::string>());
  p.sinks = j.at("sinks").get<int>();
  p.window = j.at("window").get<int>();
  p.heavy = j.at("heavy").get<int>();
  p.recent = j.at("recent").get<int>();
  p.slack = j.at("slack").get<int>();
  p.rolling = j.at("rolling").get<bool>();
  return p;
}

json to_json(const RecordingHeader& h) {
  json policies = json::array();
  for (const auto& p : h.policies) policies.push_back(policy_json(p));
  return {{"manifest", h.manifest}, {"mode", h.mode},         {"title", h.title},      {"layers", h.layers},
          {"heads", h.heads},       {"kv_heads", h.kv_heads}, {"policies", policies}};
}

RecordingHeader header_from_json(const json& j) {
  RecordingHeader h;
  h.manifest = j.value("manifest", json::object());
  h.mode = j.at("mode").get<std::string>();
  h.title = j.value("title", "");
  h.layers = j.at("layers").get<int>();
  h.heads = j.at("heads").get<int>();
  h.kv_heads = j.at("kv_heads").get<int>();
  for (const auto& p : j.at("policies")) h.policies.push_back(policy_from_json(p));
  if (h.policies.empty() || h.layers < 1 || h.heads < 1 || h.kv_heads < 1) throw Error("header: empty shape or no policies");
  return h;
}

static Phase phase_from_name(const std::string& name) {
  if (name == "prefill") return Phase::Prefill;
  if (name == "decode") return Phase::Decode;
  if (name == "forced") return Phase::Forced;
  if (name == "done") return Phase::Done;
  throw Error("unknown phase '" + name + "'");
}

static json session_json(const SessionRecord& s) {
  json fed_text = json::array();
  for (const auto& t : s.fed_text) fed_text.push_back(text_json(t));
  json evictions = json::array();
  for (const auto& e : s.evictions) evictions.push_back({e.layer, e.kv_head, e.position});
  json j = {{"session", s.session},
            {"fed", s.fed},
            {"fed_text", fed_text},
            {"token", s.token},
            {"text", text_json(s.text)},
            {"eos", s.eos},
            {"cached_tokens", s.cached_tokens},
            {"live_bytes", s.live_bytes},
            {"allocated_bytes", s.allocated_bytes},
            {"step_ms", s.step_ms},
            {"tok_s", s.decode_tokens_per_s},
            {"evictions", evictions},
            {"nll", s.nll},
            {"kl", s.kl},
            {"agree", s.agree}};
  if (s.attention) {
    const AttentionCapture& a = *s.attention;
    j["attention"] = {{"layer", a.layer},       {"rows", a.rows},   {"query", a.query_positions},
                      {"keys", a.key_positions}, {"probs", a.probs}, {"top_share", s.top_share}};
  }
  if (!s.stopped.empty()) j["stopped"] = s.stopped;
  if (s.scores)
    j["scores"] = {{"layer", s.scores->layer}, {"positions", s.scores->positions}, {"values", s.scores->values}};
  return j;
}

static SessionRecord session_from_json(const json& j) {
  SessionRecord s;
  s.session = j.at("session").get<int>();
  s.fed = j.at("fed").get<std::vector<int>>();
  for (const auto& t : j.at("fed_text")) s.fed_text.push_back(text_from_json(t));
  s.token = j.at("token").get<int>();
  s.text = text_from_json(j.at("text"));
  s.eos = j.at("eos").get<bool>();
  s.cached_tokens = j.at("cached_tokens").get<int>();
  s.live_bytes = j.at("live_bytes").get<int64_t>();
  s.allocated_bytes = j.at("allocated_bytes").get<int64_t>();
  s.step_ms = j.at("step_ms").get<double>();
  s.decode_tokens_per_s = j.at("tok_s").get<double>();
  for (const auto& e : j.at("evictions"))
    s.evictions.push_back({e.at(0).get<int>(), e.at(1).get<int>(), e.at(2).get<int32_t>()});
  s.nll = j.at("nll").get<std::vector<double>>();
  s.kl = j.at("kl").get<std::vector<double>>();
  s.agree = j.at("agree").get<std::vector<int>>();
  if (j.contains("stopped")) s.stopped = j.at("stopped").get<std::string>();
  if (j.contains("attention")) {
    const json& a = j["attention"];
    AttentionCapture c;
    c.layer = a.at("layer").get<int>();
    c.rows = a.at("rows").get<int>();
    c.query_positions = a.at("query").get<std::vector<int32_t>>();
    c.key_positions = a.at("keys").get<std::vector<std::vector<int32_t>>>();
    c.probs = a.at("probs").get<std::vector<std::vector<float>>>();
    s.top_share = a.at("top_share").get<std::vector<float>>();
    s.attention = std::move(c);
  }
  if (j.contains("scores")) {
    RecordedScores sc;
    sc.layer = j["scores"].at("layer").get<int>();
    sc.positions = j["scores"].at("positions").get<std::vector<std::vector<int32_t>>>();
    sc.values = j["scores"].at("values").get<std::vector<std::vector<float>>>();
    s.scores = std::move(sc);
  }
  return s;
}

json to_json(const StepRecord& r) {
  json sessions = json::array();
  for (const auto& s : r.sessions) sessions.push_back(session_json(s));
  return {{"step", r.step},           {"phase", phase_name(r.phase)}, {"prompt", r.prompt_index},
          {"turn_start", r.turn_start}, {"turn_end", r.turn_end},     {"engine_s", r.engine_seconds},
          {"sessions", sessions}};
}

StepRecord step_from_json(const json& j) {
  StepRecord r;
  r.step = j.at("step").get<int64_t>();
  r.phase = phase_from_name(j.at("phase").get<std::string>());
  r.prompt_index = j.at("prompt").get<int>();
  r.turn_start = j.at("turn_start").get<bool>();
  r.turn_end = j.at("turn_end").get<bool>();
  r.engine_seconds = j.at("engine_s").get<double>();
  for (const auto& s : j.at("sessions")) r.sessions.push_back(session_from_json(s));
  return r;
}

std::string recording_first_line(const RecordingHeader& header) {
  return json_dump(json{{"format", "h2o-studio-recording"}, {"version", 1}, {"header", to_json(header)}});
}

// ---- reading --------------------------------------------------------------------

RecordingReader::RecordingReader(const std::string& path) : path_(path) {
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file) fail(path, "cannot open the recording");
  in_ = std::move(file);
  std::string line;
  if (!std::getline(*in_, line)) fail(path, "empty file, not an H2O Studio recording");
  line_ = 1;
  try {
    const json first = json::parse(line);
    if (first.value("format", "") != "h2o-studio-recording") fail(path, "not an H2O Studio recording");
    if (first.value("version", 0) != 1) fail(path, "unsupported recording version");
    header_ = header_from_json(first.at("header"));
  } catch (const json::exception& e) {
    fail(path + ":1", e.what());
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(path, 0) == 0) throw;
    fail(path + ":1", e.what());
  }
}

std::optional<StepRecord> RecordingReader::next() {
  std::string line;
  while (std::getline(*in_, line)) {
    ++line_;
    if (line.empty()) continue;
    try {
      const json j = json::parse(line);
      if (j.contains("totals")) {
        totals_ = j["totals"];
        continue;
      }
      return step_from_json(j);
    } catch (const json::exception& e) {
      fail(path_ + ":" + std::to_string(line_), e.what());
    } catch (const Error& e) {
      fail(path_ + ":" + std::to_string(line_), e.what());
    }
  }
  return std::nullopt;
}

}  // namespace h2o
