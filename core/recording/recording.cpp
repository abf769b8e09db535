#include "core/recording/recording.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/stopwatch.h"
#include "core/base/system_limits.h"
#include "core/recording/step_line.h"
#include "core/recording/step_payload.h"

namespace h2o {
using nlohmann::json;

namespace {
constexpr int kVersion = kRecordingVersion;
// The largest shapes a recording's header may name (beyond any model there is:
// 80 layers x 8 KV heads for a 70B Llama; the analyzer keeps a list per layer and KV head).
constexpr int kMaxLayers = 1024, kMaxHeads = 256, kMaxLayerKvHeads = 16384;
}

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
  h.context = c.max_seq_len;
  return h;
}

// ---- header -----------------------------------------------------------------------

json to_json(const RecordingHeader& h) {
  json policies = json::array();
  for (const auto& p : h.policies) policies.push_back(policy_json(p));
  json j = {{"manifest", h.manifest}, {"mode", h.mode},         {"title", h.title},      {"layers", h.layers},
            {"heads", h.heads},       {"kv_heads", h.kv_heads}, {"policies", policies}};
  if (h.context > 0) j["context"] = h.context;
  if (h.view_layer >= 0) j["view"] = {{"layer", h.view_layer}, {"head", h.view_head}};
  if (!h.settings.is_null()) j["settings"] = h.settings;
  return j;
}

RecordingHeader header_from_json(const json& j) {
  RecordingHeader h;
  h.manifest = j.value("manifest", json::object());
  h.mode = j.at("mode").get<std::string>();
  h.title = j.value("title", "");
  h.layers = json_int(j.at("layers"), "header: \"layers\"");
  h.heads = json_int(j.at("heads"), "header: \"heads\"");
  h.kv_heads = json_int(j.at("kv_heads"), "header: \"kv_heads\"");
  for (const auto& p : j.at("policies")) h.policies.push_back(policy_from_json(p));
  // Optional: older files say nothing of the context (the manifest may), the view or the settings.
  h.context = json_int_or(j, "context", 0, "header: \"context\"");
  if (h.context <= 0 && h.manifest.contains("model"))
    h.context = json_int_or(h.manifest["model"], "max_seq_len", 0, "header: the manifest's \"max_seq_len\"");
  if (j.contains("view") && j["view"].is_object()) {
    h.view_layer = json_int_or(j["view"], "layer", -1, "header: the view's \"layer\"");
    h.view_head = json_int_or(j["view"], "head", -1, "header: the view's \"head\"");
  }
  if (j.contains("settings") && j["settings"].is_object()) h.settings = j["settings"];
  // Shapes a model can have, and a bounded number of sessions (the app shows fewer: StudioRun::replay).
  if (h.layers < 1 || h.layers > kMaxLayers || h.heads < 1 || h.heads > kMaxHeads || h.kv_heads < 1 ||
      h.kv_heads > h.heads || h.heads % h.kv_heads != 0 || h.layers * h.kv_heads > kMaxLayerKvHeads)
    throw Error("header: no model has " + std::to_string(h.layers) + " layers of " + std::to_string(h.heads) +
                " heads (" + std::to_string(h.kv_heads) + " KV)");
  if (h.policies.empty() || int(h.policies.size()) > kMaxRecordedSessions)
    throw Error("header: " + std::to_string(h.policies.size()) + " policies (1 to " +
                std::to_string(kMaxRecordedSessions) + ")");
  if (h.view_layer >= h.layers || h.view_head >= h.heads) h.view_layer = h.view_head = -1;  // not this model's view
  return h;
}

std::string recording_first_line(const RecordingHeader& header) {
  return json_dump(json{{"format", "h2o-studio-recording"}, {"version", kVersion}, {"header", to_json(header)}});
}

// ---- steps --------------------------------------------------------------------------

// A session's fixed fields through the JSON library; its payload's size
// (the payload itself follows the line: recording_step_line) spliced in after.
static std::string session_text(const SessionRecord& s, size_t payload_bytes) {
  json fed_text = json::array();
  for (const auto& t : s.fed_text) fed_text.push_back(text_json(t));
  json j = {{"session", s.session},
            {"fed", s.fed},
            {"position", s.position},
            {"fed_text", fed_text},
            {"token", s.token},
            {"text", text_json(s.text)},
            {"eos", s.eos},
            {"cached_tokens", s.cached_tokens},
            {"live_bytes", s.live_bytes},
            {"allocated_bytes", s.allocated_bytes},
            {"step_ms", s.step_ms},
            {"tok_s", s.decode_tokens_per_s},
            {"evictions", {{"all", s.evictions.everywhere}}},
            {"nll", s.nll},
            {"kl", s.kl},
            {"agree", s.agree}};
  if (s.prefill_tokens_per_s > 0) j["tok_s_prefill"] = s.prefill_tokens_per_s;
  if (s.quantized_tokens > 0) j["quantized_tokens"] = s.quantized_tokens;
  if (!s.stopped.empty()) j["stopped"] = s.stopped;
  if (s.needle_begin >= 0) j["needle"] = {s.needle_begin, s.needle_end};
  std::string text = json_dump(j);
  if (payload_bytes > 0) {
    text.pop_back();  // the object's closing brace
    text += ",\"payload_bytes\":" + std::to_string(payload_bytes) + "}";
  }
  return text;
}

std::string recording_step_line(const StepRecord& r) {
  // Evictions by head, captures and states: one compressed payload a session (step_payload.h).
  std::vector<std::string> payloads(r.sessions.size());
  size_t tail = 0;
  for (size_t i = 0; i < r.sessions.size(); ++i) {
    const SessionRecord& s = r.sessions[i];
    if (!s.evictions.by_head.empty() || !s.attention.empty() || !s.layer_states.empty())
      payloads[i] = encode_session_payload(s);
    tail += payloads[i].size();
  }
  json j = {{"step", r.step},           {"phase", phase_name(r.phase)}, {"prompt", r.prompt_index},
            {"turn_start", r.turn_start}, {"turn_end", r.turn_end},     {"engine_s", r.engine_seconds}};
  if (r.thinned) j["thinned"] = true;
  if (r.needle)
    j["needle"] = {{"text", text_json(r.needle->text)}, {"question", text_json(r.needle->question)},
                   {"answer", text_json(r.needle->answer)}, {"question_ids", r.needle->question_ids},
                   {"answer_ids", r.needle->answer_ids}};
  if (!r.asked.empty()) {
    json asked = json::array();
    for (const AskAnswer& a : r.asked)
      asked.push_back({{"answer_nll", std::isfinite(a.answer_nll) ? json(a.answer_nll) : json()},
                       {"answer_tokens", a.answer_tokens}, {"exact", a.exact},
                       {"survival_answer", std::isfinite(a.survival_answer) ? json(a.survival_answer) : json()},
                       {"said", text_json(a.said)}});
    j["asked"] = asked;
  }
  std::string line = json_dump(j);
  line.pop_back();  // the object's closing brace: the sessions follow
  // The tail's size first, where a reader finds it before parsing the line.
  if (tail > 0) line = std::string(kTailField) + std::to_string(tail) + "," + line.substr(1);
  line += ",\"sessions\":[";
  for (size_t i = 0; i < r.sessions.size(); ++i) {
    if (i) line += ',';
    line += session_text(r.sessions[i], payloads[i].size());
  }
  line += "]}";
  if (tail == 0) return line;
  line.reserve(line.size() + 1 + tail);
  line += '\n';
  for (const std::string& p : payloads) line += p;
  return line;
}

bool read_record(std::istream& in, std::string& record) {
  if (!std::getline(in, record)) return false;
  if (record.rfind(kTailField, 0) != 0) return true;
  int64_t bytes = -1;
  const char* digits = record.data() + kTailField.size();
  const auto [end, ec] = std::from_chars(digits, record.data() + record.size(), bytes);
  if (ec != std::errc{} || *end != ',' || bytes <= 0 || bytes > kMaxTailBytes)
    throw Error("the step's \"tail\" is not a byte count from 1 to " + std::to_string(kMaxTailBytes));
  // Read a MiB at a time: a count that claims more than the file holds allocates no more than it holds.
  record += '\n';
  for (int64_t left = bytes; left > 0;) {
    const size_t at = record.size(), chunk = size_t(std::min<int64_t>(left, int64_t(1) << 20));
    record.resize(at + chunk);
    if (!in.read(record.data() + at, std::streamsize(chunk)))
      throw Error("the file ends inside a step's payloads (" + std::to_string(bytes) + " bytes said)");
    left -= int64_t(chunk);
  }
  char newline = 0;
  if (in.get(newline) && newline != '\n') throw Error("no line end after a step's payloads");
  in.clear(in.rdstate() & ~std::ios::failbit);  // the last record's line end may be missing
  return true;
}

bool is_checkpoint_record(std::string_view record) {
  if (record.rfind(kTailField, 0) != 0) return false;
  const size_t comma = record.find(',');
  return comma != std::string_view::npos && record.substr(comma + 1).rfind("\"checkpoint\":", 0) == 0;
}

// ---- reading --------------------------------------------------------------------------

RecordingReader::RecordingReader(const std::string& path) : path_(path) {
  // Asked before opening: opening a pipe for reading waits for a writer, for good if none comes.
  std::error_code ec;
  const std::filesystem::file_type type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::directory) fail(path, "a folder, not a recording");
  if (!ec && type != std::filesystem::file_type::regular && type != std::filesystem::file_type::not_found)
    fail(path, "not a regular file (a pipe or a device): a replay seeks in its recording; save it to a file first");
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file) fail(path, "cannot open the recording");
  in_ = std::move(file);
  std::string line;
  if (!std::getline(*in_, line)) fail(path, "empty file, not an H2O Studio recording");
  line_ = 1;
  try {
    // A text file or anything else is named as such, not by the parser's "[json.exception…] last read".
    const json first = json::parse(line, nullptr, false);
    if (first.is_discarded() || !first.is_object() || first.value("format", "") != "h2o-studio-recording")
      fail(path, "not an H2O Studio recording (its first line is not a recording's header)");
    version_ = json_int_or(first, "version", 0, "\"version\"");
    if (version_ < 1 || version_ > kVersion)
      fail(path, "recording version " + std::to_string(version_) + " is not one this build reads (1 to " +
                     std::to_string(kVersion) + ")");
    header_ = header_from_json(first.at("header"));
    shape_ = line_shape(header_);
  } catch (const json::exception& e) {
    fail(path + ":1", e.what());
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(path, 0) == 0) throw;
    fail(path + ":1", e.what());
  }
  read_checkpoint();
}

void RecordingReader::read_checkpoint() {
  const std::streampos start = in_->tellg();
  std::string record;
  try {
    if (read_record(*in_, record) && is_checkpoint_record(record)) {
      const size_t end = record.find('\n');
      const json line = json::parse(record.substr(0, end));
      checkpoint_step_ = json_int_or(line.at("checkpoint"), "step", -1, "\"step\"");
      if (checkpoint_step_ < 0 || checkpoint_step_ >= (int64_t(1) << 30)) throw Error("a checkpoint's \"step\" out of range");
      checkpoint_ = record.substr(end + 1);
      line_ = 2;
      return;
    }
  } catch (const json::exception& e) {
    fail(path_ + ":2", e.what());
  } catch (const Error& e) {
    // A step's framing error: said with its line when the step is reached.
    if (checkpoint_step_ >= 0 || is_checkpoint_record(record)) fail(path_ + ":2", e.what());
  }
  checkpoint_step_ = -1;
  in_->clear();
  in_->seekg(start);
}

void RecordingReader::read_ahead() {
  constexpr size_t kBatch = 32;
  std::vector<std::string> lines;
  std::vector<Parsed> batch;
  std::string line;
  while (lines.size() < kBatch) {
    const int64_t offset = int64_t(in_->tellg());
    std::string error;
    try {
      if (!read_record(*in_, line)) break;
    } catch (const Error& e) {  // said when the step is reached; nothing after it can be found
      error = e.what();
    }
    ++line_;
    if (line.empty() && error.empty()) continue;
    batch.push_back({offset, line_, std::nullopt, false, false, nullptr, error});
    lines.push_back(std::move(line));
    if (!error.empty()) break;
  }
  const auto parse = [&](size_t i) {
    Parsed& p = batch[i];
    if (!p.error.empty()) return;
    try {
      RecordingLine parsed = parse_recording_line(lines[i], version_, skim_below_, &shape_);
      p.record = std::move(parsed.step);
      p.skimmed = parsed.skimmed;
      if (p.record) check_step_fits(*p.record, header_, p.skimmed);
      p.is_totals = parsed.totals;
      if (p.is_totals) p.totals = json::parse(lines[i]).at("totals");
    } catch (const std::exception& e) {  // said when the step is reached
      p.error = e.what();
    }
  };
  // Each core takes lines as they come; each line's result goes to its own slot.
  if (!pool_) {
    const int threads = std::clamp(hardware_threads(), 1, 8);
    try {
      pool_ = std::make_unique<ThreadPool>(threads);
    } catch (const Error&) {  // no threads to be had: this one parses alone
      pool_ = std::make_unique<ThreadPool>(1);
    }
  }
  pool_->parallel_for(int(lines.size()), 1, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) parse(size_t(i));
  });
  for (Parsed& p : batch) ahead_.push_back(std::move(p));
}

void RecordingReader::skim_below(int64_t step) {
  const auto stale = std::find_if(ahead_.begin(), ahead_.end(), [&](const Parsed& p) {
    return p.skimmed && p.record->step >= step;
  });
  if (stale != ahead_.end()) {  // from there on, read again
    in_->clear();
    in_->seekg(stale->offset);
    line_ = stale->line - 1;
    ahead_.erase(stale, ahead_.end());
  }
  skim_below_ = step;
}

std::optional<StepRecord> RecordingReader::next() {
  while (true) {
    if (ahead_.empty()) read_ahead();
    if (ahead_.empty()) return std::nullopt;
    Parsed p = std::move(ahead_.front());
    ahead_.pop_front();
    if (!p.error.empty()) {
      ahead_.clear();
      fail(path_ + ":" + std::to_string(p.line), p.error);
    }
    if (p.is_totals) {
      totals_ = std::move(p.totals);
      continue;
    }
    // Steps follow one another: a swapped, repeated or missing one is this file's fault, said with
    // its line (the analyzer could only say "step 5 does not follow step 3").
    if (index_.first_step >= 0 && p.record->step != index_.last_step() + 1) {
      ahead_.clear();
      fail(path_ + ":" + std::to_string(p.line), "step " + std::to_string(p.record->step) + " does not follow step " +
                                                      std::to_string(index_.last_step()) + " (a step missing, repeated or out of order)");
    }
    index_.add(p.offset, *p.record);
    return std::move(*p.record);
  }
}

// ---- checks ---------------------------------------------------------------------------

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

void check_capture(const AttentionCapture& a, const RecordingHeader& h, bool skimmed) {
  const std::string at = "attention of layer " + std::to_string(a.layer) + ": ";
  check(a.layer >= 0 && a.layer < h.layers, at + "no such layer");
  check(a.head == kAllHeads || a.head == kGroupMean || (a.head >= 0 && a.head < h.heads), at + "no such head");
  check(a.rows >= 0 && a.rows <= (1 << 20), at + "rows out of range");
  const int heads = AttentionCapture::captured_heads(a.head, h.heads, h.kv_heads);
  check(a.top_share.empty() || int(a.top_share.size()) == heads, at + "top_share does not list every head");
  if (skimmed) return;  // its arrays were skipped unread
  check(int(a.query_positions.size()) == a.rows, at + "query positions do not match its rows");
  check(int(a.key_positions.size()) == h.kv_heads, at + "key positions do not list every KV head");
  check(int(a.probs.size()) == heads, at + "probabilities do not list every head captured");
  for (int c = 0; c < heads; ++c) {
    const auto& keys = a.key_positions[size_t(AttentionCapture::kv_head_of(a.head, c, h.heads, h.kv_heads))];
    check(a.probs[size_t(c)].size() == size_t(a.rows) * keys.size(), at + "probabilities are not rows x keys");
  }
  for (const auto& keys : a.key_positions)
    for (int32_t p : keys) check(p >= 0, at + "a negative key position");
  for (int32_t p : a.query_positions) check(p >= 0, at + "a negative query position");
}

void check_state(const LayerState& s, const RecordingHeader& h) {
  const std::string at = "state of layer " + std::to_string(s.layer) + ": ";
  check(s.layer >= 0 && s.layer < h.layers, at + "no such layer");
  check(int(s.positions.size()) == h.kv_heads && s.scores.size() == s.positions.size(),
        at + "positions and scores do not list every KV head");
  for (size_t kv = 0; kv < s.positions.size(); ++kv) {
    check(s.scores[kv].size() == s.positions[kv].size(), at + "a score for every position");
    for (int32_t p : s.positions[kv]) check(p >= 0, at + "a negative position");
  }
}

}  // namespace

LineShape line_shape(const RecordingHeader& header) {
  LineShape shape{header.layers, header.heads, header.kv_heads, {}};
  for (const PolicyConfig& p : header.policies) shape.rules.push_back(p.rule());
  return shape;
}

void check_step_fits(const StepRecord& r, const RecordingHeader& h, bool skimmed) {
  // The analyzer keeps steps in 32 bits.
  check(r.step >= 0 && r.step < INT32_MAX, "step " + std::to_string(r.step) + " out of range");
  check(r.asked.empty() || r.asked.size() == h.policies.size(),
        "an ask answered by " + std::to_string(r.asked.size()) + " panes of " + std::to_string(h.policies.size()));
  for (const AskAnswer& a : r.asked)
    check(a.answer_tokens >= 0 && !(a.answer_nll < 0) && !(a.survival_answer < 0) && !(a.survival_answer > 1),
          "an ask's answer out of range");
  for (const SessionRecord& s : r.sessions) {
    const std::string at = "session " + std::to_string(s.session) + ": ";
    check(s.session >= 0 && s.session < int(h.policies.size()), at + "no such policy in the header");
    check(s.fed_text.size() <= s.fed.size(), at + "more texts than tokens fed");
    check(s.cached_tokens >= 0 && s.live_bytes >= 0 && s.allocated_bytes >= 0, at + "negative sizes");
    check(s.quantized_tokens >= 0 && s.quantized_tokens <= s.cached_tokens,
          at + "quantized_tokens " + std::to_string(s.quantized_tokens) + " outside 0 to cached_tokens " +
              std::to_string(s.cached_tokens));
    // -1: not recorded (version 1 wrote no position; a copy of one keeps it so).
    check(s.position >= -1 && s.position < INT32_MAX, at + "position " + std::to_string(s.position) + " out of range");
    // Times and rates are never negative (NaN and infinities are refused as JSON already).
    check(s.step_ms >= 0 && s.decode_tokens_per_s >= 0 && s.prefill_tokens_per_s >= 0,
          at + "a negative time or rate (step_ms, tok_s)");
    for (int32_t p : s.evictions.everywhere) check(p >= 0, at + "a negative evicted position");
    check(s.needle_begin < 0 || (s.needle_begin >= s.position && s.needle_end > s.needle_begin &&
                                 s.needle_end < INT32_MAX),
          at + "a needle outside the stream (\"needle\": [begin, end])");
    for (const EvictionEvent& e : s.evictions.by_head)
      check(e.layer >= 0 && e.layer < h.layers && e.kv_head >= 0 && e.kv_head < h.kv_heads && e.position >= 0,
            at + "an eviction outside the model");
    try {
      for (const AttentionCapture& a : s.attention) check_capture(a, h, skimmed);
      for (const LayerState& st : s.layer_states) check_state(st, h);
    } catch (const Error& e) {
      throw Error(at + e.what());
    }
  }
}

// ---- random access ----------------------------------------------------------------

void RecordingIndex::add(int64_t offset, const StepRecord& record) {
  if (first_step < 0) first_step = record.step;
  // Steps come in order; a gap (never in our files) would misplace the rest: keep what lines up.
  if (record.step != first_step + int64_t(offsets.size())) return;
  offsets.push_back(offset);
  uint8_t mask = 0;
  for (const SessionRecord& s : record.sessions)
    if (s.session >= 0 && s.session < 8 && !s.layer_states.empty()) mask |= uint8_t(1u << s.session);
  state_mask.push_back(mask);
}

void RecordingIndex::drop_before(int64_t step, int64_t shift) {
  if (!has(step)) {
    *this = RecordingIndex{};
    return;
  }
  const auto n = long(step - first_step);
  offsets.erase(offsets.begin(), offsets.begin() + n);
  state_mask.erase(state_mask.begin(), state_mask.begin() + n);
  for (int64_t& o : offsets) o -= shift;
  first_step = step;
}

int64_t RecordingIndex::last_state_at(int session, int64_t step) const {
  if (session < 0 || session >= 8 || first_step < 0) return -1;
  for (int64_t t = std::min(step, last_step()); t >= first_step; --t)
    if (state_mask[size_t(t - first_step)] & (1u << session)) return t;
  return -1;
}

RecordingLines::RecordingLines(const std::string& path, const RecordingHeader& header, int version)
    : path_(path), in_(path, std::ios::binary), version_(version) {
  if (!in_) fail(path, "cannot open the recording");
  shape_.layers = header.layers;
  shape_.heads = header.heads;
  shape_.kv_heads = header.kv_heads;
  shape_.policies = header.policies;
  line_shape_ = line_shape(header);
}

StepRecord RecordingLines::read(const RecordingIndex& index, int64_t step) {
  const std::string where = path_ + ": step " + std::to_string(step);
  if (!index.has(step)) fail(where, "not in the recording");
  in_.clear();
  in_.seekg(index.offset(step));
  std::string line;
  try {
    if (!read_record(in_, line)) throw Error("cannot read the line");
    StepRecord record = parse_step_line(line, version_, &line_shape_);
    check_step_fits(record, shape_);
    return record;
  } catch (const std::exception& e) {
    fail(where, e.what());
  }
  return {};
}

int64_t count_recorded_steps(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  int64_t steps = 0;
  std::string line;
  // The header line begins {"format", the totals {"totals", a checkpoint {"tail":N,"checkpoint";
  // every other non-empty record is a step.
  try {
    while (read_record(in, line))
      if (!line.empty() && line.rfind("{\"format\"", 0) != 0 && line.rfind("{\"totals\"", 0) != 0 &&
          !is_checkpoint_record(line))
        ++steps;
  } catch (const Error&) {  // a step cut short is not counted: the reader says what is wrong with it
  }
  return steps;
}

// ---- writing --------------------------------------------------------------------------

RecordingWriter::RecordingWriter(const std::string& path, const RecordingHeader& header, int64_t limit_bytes)
    : path_(path), first_line_(recording_first_line(header) + '\n'), out_(path, std::ios::binary | std::ios::trunc),
      limit_(limit_bytes) {
  if (!out_) fail(path, "cannot create the recording");
  out_.write(first_line_.data(), std::streamsize(first_line_.size()));
  bytes_ = prefix_bytes_ = int64_t(first_line_.size());
}

RecordingWriter::~RecordingWriter() {
  std::error_code ignored;
  std::filesystem::remove(checkpoint_path(), ignored);
}

void RecordingWriter::write(const StepRecord& record) {
  if (stopped()) return;
  std::string line;
  {
    StageTimer timer(encode_s_);
    line = recording_step_line(record);
    line += '\n';
  }
  if (limit_ > 0 && checkpoint_) make_room(record.step, int64_t(line.size()));
  if (stopped()) return;
  const int64_t offset = bytes_;
  {
    StageTimer timer(write_s_);
    out_.write(line.data(), std::streamsize(line.size()));
  }
  bytes_ += int64_t(line.size());
  if (!out_) {
    stop_reason_ = "The recording could not be written to " + path_ + " (disk full?)";
    return;
  }
  last_step_ = record.step;
  index_.add(offset, record);
  if (limit_ > 0 && !checkpoint_ && bytes_ >= limit_)
    stop_reason_ = "The recording reached its limit of " + std::to_string(limit_ >> 20) + " MiB";
}

void RecordingWriter::make_room(int64_t step, int64_t incoming) {
  try {
    if (span_step_ < 0 && room_half_full()) start_span(step);
    if (bytes_ + incoming <= limit_ || span_step_ < 0) return;
    turn();
    if (bytes_ + incoming > limit_)
      stop_reason_ = "The recording reached its limit of " + std::to_string(limit_ >> 20) +
                     " MiB: the whole history's checkpoint (" + std::to_string((prefix_bytes_ >> 20) + 1) +
                     " MiB) leaves no room for the newest steps";
    else if (room_half_full())
      start_span(step);
  } catch (const std::exception& e) {
    stop_reason_ = std::string("The recording could not keep its newest steps: ") + e.what();
  }
}

bool RecordingWriter::room_half_full() const {
  // The room for steps is the limit less line 1 and the checkpoint; a turn
  // keeps the newer half, so the ring holds half that room or more. A
  // checkpoint holds one step at least: no span starts before the first step.
  return index_.first_step >= 0 && bytes_ - prefix_bytes_ >= (limit_ - prefix_bytes_) / 2;
}

void RecordingWriter::start_span(int64_t step) {
  StageTimer timer(write_s_);
  std::ofstream side(checkpoint_path(), std::ios::binary | std::ios::trunc);
  if (!side) throw Error("cannot create " + checkpoint_path());
  checkpoint_(side);
  side.close();
  if (!side) throw Error("cannot write " + checkpoint_path() + " (disk full?)");
  span_step_ = step;
  span_offset_ = bytes_;
}

void RecordingWriter::turn() {
  StageTimer timer(write_s_);
  out_.flush();
  const std::string fresh = path_ + ".turning";
  std::error_code ec;
  const int64_t frame = int64_t(std::filesystem::file_size(checkpoint_path(), ec));
  if (ec || frame <= 0 || frame > kMaxTailBytes) throw Error("the checkpoint beside the recording is missing or too large");
  const std::string head =
      "{\"tail\":" + std::to_string(frame) + ",\"checkpoint\":{\"step\":" + std::to_string(span_step_ - 1) + "}}\n";
  {
    std::ofstream out(fresh, std::ios::binary | std::ios::trunc);
    std::ifstream checkpoint(checkpoint_path(), std::ios::binary), steps(path_, std::ios::binary);
    out << first_line_ << head << checkpoint.rdbuf() << '\n';
    steps.seekg(span_offset_);
    if (span_offset_ < bytes_) out << steps.rdbuf();
    out.close();
    if (!out || !checkpoint || !steps) {
      std::filesystem::remove(fresh, ec);
      throw Error("cannot write " + fresh + " (disk full?)");
    }
  }
  out_.close();
  std::filesystem::rename(fresh, path_);  // throws filesystem_error, said as the reason to stop
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw Error("cannot reopen " + path_);
  const int64_t prefix = int64_t(first_line_.size() + head.size()) + frame + 1;
  index_.drop_before(span_step_, span_offset_ - prefix);
  bytes_ = prefix + (bytes_ - span_offset_);
  prefix_bytes_ = prefix;
  span_step_ = -1;
  ++turns_;
}

}  // namespace h2o
