#include "core/recording/step_payload.h"

#include <openssl/evp.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/base/error.h"
#include "core/base/packed_bytes.h"

namespace h2o {

namespace {

// zstd's fastest level: a step's payload is mostly 8-bit codes and small
// deltas, which level 1 packs within a few percent of level 3 at twice the speed.
constexpr int kZstdLevel = 1;

// ---- probabilities ----------------------------------------------------------------------

const std::array<float, 256>& code_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[size_t(c)] = float(c * c) / 65025.0f;
    return t;
  }();
  return table;
}

// round(255 sqrt(p)) for p in [0, 1]; 0 for NaN (no backend writes one) and
// below, 255 above. Branch-free, so that a row's codes are computed in vector registers.
inline uint8_t probability_code(float p) {
  const float clamped = std::min(p > 0.0f ? p : 0.0f, 1.0f);
  return uint8_t(int(std::sqrt(clamped) * 255.0f + 0.5f));
}

void probability_codes(const std::vector<float>& row, char* out) {
  for (size_t i = 0; i < row.size(); ++i) out[i] = char(probability_code(row[i]));
}

// ---- the three parts ----------------------------------------------------------------------

// A capture asked for no top-k share carries NaN there (every backend fills
// the list): nothing to keep, as version 2 kept nothing.
bool holds_shares(const AttentionCapture& a) {
  return std::any_of(a.top_share.begin(), a.top_share.end(), [](float v) { return !std::isnan(v); });
}

void write_evictions(PackedWriter& w, const std::vector<EvictionEvent>& events) {
  // Runs of one (layer, KV head), in the order given (ordered by head: one run each).
  size_t runs = 0;
  for (size_t i = 0; i < events.size(); ++i)
    runs += i == 0 || events[i].layer != events[i - 1].layer || events[i].kv_head != events[i - 1].kv_head;
  w.varint(runs);
  for (size_t i = 0; i < events.size();) {
    size_t end = i;
    while (end < events.size() && events[end].layer == events[i].layer && events[end].kv_head == events[i].kv_head) ++end;
    w.signed_varint(events[i].layer);
    w.signed_varint(events[i].kv_head);
    // As positions() writes a list: the count, then each as its difference from the one before.
    w.varint(end - i);
    int64_t before = 0;
    for (size_t k = i; k < end; ++k) {
      w.signed_varint(int64_t(events[k].position) - before);
      before = events[k].position;
    }
    i = end;
  }
}

// a x b as a bound on a count: SIZE_MAX where it would overflow, so an unbounded factor stays unbounded.
size_t times(size_t a, size_t b) { return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

// A layer or head index below `n` (the header's count; SIZE_MAX: any whole
// number, left to check_step_fits); `outside` says what is wrong otherwise.
int index_below(PackedReader& r, size_t n, const char* outside) {
  const int64_t v = r.within(INT32_MIN, INT32_MAX, outside);
  if (n != SIZE_MAX && (v < 0 || uint64_t(v) >= n)) r.fail(outside);
  return int(v);
}

void read_evictions(PackedReader& r, const PayloadBounds& b, std::vector<EvictionEvent>& events) {
  // One run per (layer, KV head), each of at most the tokens that head held.
  for (size_t runs = r.count(3, times(b.layers, b.kv_heads), "more eviction runs than the model has KV heads");
       runs > 0; --runs) {
    const int layer = index_below(r, b.layers, "an eviction outside the model");
    const int kv = index_below(r, b.kv_heads, "an eviction outside the model");
    for (int32_t p : r.positions(b.keys)) events.push_back({layer, kv, p});
  }
}

void write_capture(PackedWriter& w, const AttentionCapture& a) {
  w.signed_varint(a.layer);
  w.signed_varint(a.head);
  w.signed_varint(a.rows);
  w.positions(a.query_positions);
  w.varint(a.key_positions.size());
  for (const auto& keys : a.key_positions) w.positions(keys);
  w.varint(a.probs.size());
  for (const auto& row : a.probs) {
    w.varint(row.size());
    probability_codes(row, w.append(row.size()));
  }
  const bool shares = holds_shares(a);
  w.varint(shares ? a.top_share.size() : 0);
  if (shares)
    for (float s : a.top_share) w.f32(s);
}

AttentionCapture read_capture(PackedReader& r, bool skim, const PayloadBounds& b) {
  AttentionCapture a;
  a.layer = index_below(r, b.layers, "a capture of no such layer");
  a.head = r.whole("a capture's head");
  a.rows = r.whole("a capture's rows");
  if (skim) r.skip_positions(b.rows);
  else a.query_positions = r.positions(b.rows);
  const size_t kv_heads = r.count(1, b.kv_heads, "a capture's key positions do not list every KV head");
  if (!skim) a.key_positions.reserve(kv_heads);
  for (size_t k = 0; k < kv_heads; ++k) {
    if (skim) r.skip_positions(b.keys);
    else a.key_positions.push_back(r.positions(b.keys));
  }
  const size_t heads = r.count(1, b.heads, "a capture's probabilities of more heads than the model has");
  const auto& value = code_values();
  if (!skim) a.probs.resize(heads);
  for (size_t h = 0; h < heads; ++h) {
    const std::string_view codes = r.take(r.count(1, times(b.rows, b.keys)));
    if (skim) continue;
    std::vector<float>& row = a.probs[h];
    row.resize(codes.size());
    for (size_t i = 0; i < codes.size(); ++i) row[i] = value[uint8_t(codes[i])];
  }
  a.top_share.resize(r.count(4, b.heads, "a capture's shares of more heads than the model has"));
  for (float& s : a.top_share) s = r.f32();
  return a;
}

void write_state(PackedWriter& w, const LayerState& s) {
  w.signed_varint(s.layer);
  w.varint(s.positions.size());
  for (const auto& p : s.positions) w.positions(p);
  w.varint(s.scores.size());
  for (const auto& row : s.scores) {
    w.varint(row.size());
    for (float v : row) w.f32(v);
  }
}

// What is wrong with a layer state that lists more KV heads than the model has, read or skipped.
constexpr const char* kStateOverHeads = "a layer state's positions and scores do not list every KV head";

LayerState read_state(PackedReader& r, const PayloadBounds& b) {
  LayerState s;
  s.layer = index_below(r, b.layers, "a layer state of no such layer");
  s.positions.resize(r.count(1, b.kv_heads, kStateOverHeads));
  for (auto& p : s.positions) p = r.positions(b.keys);
  s.scores.resize(r.count(1, b.kv_heads, kStateOverHeads));
  for (auto& row : s.scores) {
    row.resize(r.count(4, b.keys));
    for (float& v : row) v = r.f32();
  }
  return s;
}

void skip_state(PackedReader& r, const PayloadBounds& b) {
  index_below(r, b.layers, "a layer state of no such layer");
  for (size_t n = r.count(1, b.kv_heads, kStateOverHeads); n > 0; --n) r.skip_positions(b.keys);
  for (size_t n = r.count(1, b.kv_heads, kStateOverHeads); n > 0; --n) r.take(r.count(4, b.keys) * 4);
}

}  // namespace

std::string encode_session_payload(const SessionRecord& s) {
  // One writer per thread, kept: its buffer is then grown once, not cleared and grown for every session.
  thread_local PackedWriter w;
  w.clear();
  size_t values = 0;
  for (const AttentionCapture& a : s.attention)
    for (const auto& row : a.probs) values += row.size() + 8;
  w.reserve(values * 2 + 64);
  write_evictions(w, s.evictions.by_head);
  w.varint(s.attention.size());
  for (const AttentionCapture& a : s.attention) write_capture(w, a);
  w.varint(s.layer_states.size());
  for (const LayerState& st : s.layer_states) write_state(w, st);
  return pack_payload(w.bytes());
}

// ---- compression and text ------------------------------------------------------------------

namespace {

// A thread's compression context: the recording's level, and a checksum of the content in every frame
// (4 bytes), so that a payload damaged on disk fails its read instead of drawing something else.
ZSTD_CCtx* payload_context() {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> context = [] {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> c(ZSTD_createCCtx(), ZSTD_freeCCtx);
    ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, kZstdLevel);
    ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 1);
    return c;
  }();
  return context.get();
}

}  // namespace

std::string pack_payload(std::string_view raw) {
  // One buffer per thread, grown as needed: a fresh one would be cleared for every step.
  thread_local std::vector<char> out;
  if (out.size() < ZSTD_compressBound(raw.size())) out.resize(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress2(payload_context(), out.data(), out.size(), raw.data(), raw.size());
  if (ZSTD_isError(n)) throw Error(std::string("payload: compression failed: ") + ZSTD_getErrorName(n));
  return std::string(out.data(), n);
}

std::string unpack_payload(std::string_view packed) {
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) throw Error("payload: not a zstd frame");
  if (size > kMaxPayloadBytes) throw Error("payload: unpacks to " + std::to_string(size) + " bytes");
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::string out(size_t(size), '\0');
  const size_t n = ZSTD_decompressDCtx(context.get(), out.data(), out.size(), packed.data(), packed.size());
  // A frame written with its content's checksum (every one since 2026-12-02) fails here when damaged.
  if (ZSTD_isError(n) || n != out.size())
    throw Error(std::string("payload: damaged (") + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "a short frame") + ")");
  return out;
}

std::string payload_from_base64(std::string_view text) {
  if (text.size() % 4 != 0 || text.size() > kMaxPayloadBytes) throw Error("payload: not base64");
  std::string bytes(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), int(text.size()));
  if (n < 0) throw Error("payload: not base64");
  // EVP_DecodeBlock counts the bytes the padding stands for: drop them.
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  bytes.resize(size_t(n) - padding);
  return bytes;
}

void decode_session_payload(std::string_view frame, SessionRecord& s, bool skim, const PayloadBounds& b) {
  const std::string raw = unpack_payload(frame);
  PackedReader r(raw, "payload");
  read_evictions(r, b, s.evictions.by_head);
  // At most a capture of each head and one of all heads, per layer (the app takes one per layer).
  const size_t most_captures = times(b.layers, b.heads == SIZE_MAX ? SIZE_MAX : b.heads + 1);
  for (size_t n = r.count(4, most_captures, "more captures than the model has layers and heads"); n > 0; --n)
    s.attention.push_back(read_capture(r, skim, b));
  const size_t states = r.count(3, b.layers, "more layer states than the model has layers");
  for (size_t i = 0; i < states; ++i) {
    // A skim keeps the first state only (the watched layer's), as version 2's reader does.
    if (skim && i > 0) skip_state(r, b);
    else s.layer_states.push_back(read_state(r, b));
  }
  if (r.left() != 0) throw Error("payload: bytes after its end");
}

float recorded_probability(float p) { return code_values()[probability_code(p)]; }

void round_to_recorded(StepRecord& record) {
  const auto& value = code_values();
  for (SessionRecord& s : record.sessions)
    for (AttentionCapture& a : s.attention) {
      for (auto& row : a.probs)
        for (float& p : row) p = value[probability_code(p)];
      if (!holds_shares(a)) a.top_share.clear();
    }
}

}  // namespace h2o
