// A recording's session payload (core/recording/step_payload.h):
// everything it holds comes back exactly (probabilities as their 8-bit codes
// give them), a skim leaves out what StepDetail::Skim leaves out, and no
// corruption of its bytes crashes the reader: it reads or it says what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/base/error.h"
#include "core/recording/step_payload.h"

using namespace h2o;

namespace {

SessionRecord rich_session() {
  SessionRecord s;
  s.evictions.by_head = {{0, 1, 7}, {0, 1, 9}, {2, 0, 3}, {2, 0, 1}, {0, 1, 2}};  // runs in any order
  AttentionCapture a;
  a.layer = 2;
  a.head = kAllHeads;
  a.rows = 2;
  a.query_positions = {40, 41};
  a.key_positions = {{0, 1, 30, 41}, {0, 5, 41}};
  a.probs = {{0.5f, 0.25f, 0.125f, 0.125f, 0.1f, 0.2f, 0.3f, 0.4f}, {0.9f, 0.05f, 0.05f, 1e-6f, 0.0f, 1.0f}};
  a.top_share = {0.75f, NAN};
  AttentionCapture one = a;
  one.head = 1;
  one.rows = 1;
  one.query_positions = {41};
  one.probs = {{0.3f, 0.3f, 0.4f}};
  one.top_share = {};
  AttentionCapture none_asked = one;  // as every backend writes a capture asked for no top-k share
  none_asked.layer = 0;
  none_asked.top_share = {NAN};
  s.attention = {a, one, none_asked};
  s.layer_states = {LayerState{2, {{0, 3, 9}, {1}}, {{1.5f, 0.1f, -0.0f}, {7e30f}}}, LayerState{0, {{}, {2}}, {{}, {1}}}};
  return s;
}

void expect_same(const SessionRecord& back, const SessionRecord& sent) {
  EXPECT_EQ(back.evictions.by_head, sent.evictions.by_head);
  ASSERT_EQ(back.attention.size(), sent.attention.size());
  for (size_t i = 0; i < sent.attention.size(); ++i) {
    const AttentionCapture &b = back.attention[i], &a = sent.attention[i];
    EXPECT_EQ(b.layer, a.layer);
    EXPECT_EQ(b.head, a.head);
    EXPECT_EQ(b.rows, a.rows);
    EXPECT_EQ(b.query_positions, a.query_positions);
    EXPECT_EQ(b.key_positions, a.key_positions);
    ASSERT_EQ(b.probs.size(), a.probs.size());
    for (size_t h = 0; h < a.probs.size(); ++h) {
      ASSERT_EQ(b.probs[h].size(), a.probs[h].size());
      for (size_t k = 0; k < a.probs[h].size(); ++k) EXPECT_EQ(b.probs[h][k], recorded_probability(a.probs[h][k]));
    }
    if (std::all_of(a.top_share.begin(), a.top_share.end(), [](float v) { return std::isnan(v); })) {
      EXPECT_TRUE(b.top_share.empty()) << "shares of NaN only are not kept";
      continue;
    }
    ASSERT_EQ(b.top_share.size(), a.top_share.size());
    for (size_t h = 0; h < a.top_share.size(); ++h)
      EXPECT_TRUE(b.top_share[h] == a.top_share[h] || (std::isnan(b.top_share[h]) && std::isnan(a.top_share[h])));
  }
  ASSERT_EQ(back.layer_states.size(), sent.layer_states.size());
  for (size_t i = 0; i < sent.layer_states.size(); ++i) {
    EXPECT_EQ(back.layer_states[i].layer, sent.layer_states[i].layer);
    EXPECT_EQ(back.layer_states[i].positions, sent.layer_states[i].positions);
    EXPECT_EQ(back.layer_states[i].scores, sent.layer_states[i].scores);
  }
}

}  // namespace

TEST(StepPayload, EverythingComesBackExactlyWithProbabilitiesAsTheirCodesGiveThem) {
  const SessionRecord sent = rich_session();
  SessionRecord back;
  decode_session_payload(encode_session_payload(sent), back, false);
  expect_same(back, sent);
  // Codes: 0 and 1 exactly, and within half a code step of the square root elsewhere (NaN: 0).
  EXPECT_EQ(recorded_probability(0.0f), 0.0f);
  EXPECT_EQ(recorded_probability(1.0f), 1.0f);
  EXPECT_EQ(recorded_probability(NAN), 0.0f);
  EXPECT_EQ(recorded_probability(-0.5f), 0.0f);
  EXPECT_EQ(recorded_probability(1.5f), 1.0f);
  for (float p : {1e-6f, 1e-3f, 0.01f, 0.3f, 0.77f, 0.999f})
    EXPECT_LE(std::abs(std::sqrt(recorded_probability(p)) - std::sqrt(p)), 0.5f / 255 + 1e-6f) << p;
  // Rounding twice changes nothing: a live run's rounded record is what its recording reads back.
  for (float p : {1e-6f, 0.3f, 0.77f}) EXPECT_EQ(recorded_probability(recorded_probability(p)), recorded_probability(p));
  StepRecord record;
  record.sessions = {sent};
  round_to_recorded(record);
  EXPECT_EQ(record.sessions[0].attention[0].top_share.size(), 2u);  // a real share beside a NaN stays
  EXPECT_TRUE(record.sessions[0].attention[2].top_share.empty());
}

TEST(StepPayload, ASkimLeavesOutPositionsProbabilitiesAndEveryStateButTheFirst) {
  SessionRecord back;
  decode_session_payload(encode_session_payload(rich_session()), back, true);
  EXPECT_EQ(back.evictions.by_head.size(), 5u);
  ASSERT_EQ(back.attention.size(), 3u);
  EXPECT_EQ(back.attention[0].layer, 2);
  EXPECT_EQ(back.attention[0].rows, 2);
  EXPECT_EQ(back.attention[0].top_share.size(), 2u);
  EXPECT_TRUE(back.attention[0].probs.empty());
  EXPECT_TRUE(back.attention[0].key_positions.empty());
  EXPECT_TRUE(back.attention[0].query_positions.empty());
  ASSERT_EQ(back.layer_states.size(), 1u);
  EXPECT_EQ(back.layer_states[0].layer, 2);
}

TEST(StepPayload, CorruptBytesReadOrFailWithOneErrorNeverACrash) {
  const std::string raw = unpack_payload(encode_session_payload(rich_session()));
  const auto read = [](const std::string& bytes) {
    SessionRecord s;
    for (bool skim : {false, true}) {
      try {
        decode_session_payload(pack_payload(bytes), s, skim);
      } catch (const Error&) {
      }
    }
  };
  for (size_t n = 0; n < raw.size(); ++n) read(raw.substr(0, n));
  std::mt19937 random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = raw;
    for (int flips = 1 + int(random() % 3); flips > 0; --flips) bytes[random() % bytes.size()] = char(random());
    read(bytes);
  }
  // Text that is not a payload at all.
  for (const char* text : {"", "====", "abc", "KLUv/SBjXQIA", "!!!!"}) {
    SessionRecord s;
    EXPECT_THROW(decode_session_payload(text, s, false), Error) << text;
  }
  // A count that claims more than the bytes hold allocates nothing and says so.
  SessionRecord s;
  EXPECT_THROW(decode_session_payload(pack_payload(std::string("\x01\x00\x00\xff\xff\xff\xff\x0f", 8)), s, false), Error);
}

// Reliability round 5: bytes damaged inside a compressed payload (four NULs, as a disk or a copy may
// leave them) fail its read, by the frame's content checksum, instead of drawing something else.
TEST(StepPayload, ADamagedCompressedPayloadFailsItsChecksum) {
  // A capture of random probabilities: bytes zstd keeps as they are, where NULs decode to other codes.
  SessionRecord session;
  AttentionCapture a;
  a.layer = 0;
  a.head = 0;
  a.rows = 1;
  a.query_positions = {511};
  a.key_positions = {{}};
  std::mt19937 random(3);
  std::vector<float> probs;
  for (int32_t k = 0; k < 512; ++k) a.key_positions[0].push_back(k), probs.push_back(float(random() % 1000) / 1000.0f);
  a.probs = {probs};
  a.top_share = {0.5f};
  session.attention = {a};
  const std::string packed = encode_session_payload(session);
  int refused = 0, tries = 0;
  for (size_t at = 6; at + 4 <= packed.size() - 4; at += 3, ++tries) {  // past the frame's header, before its checksum
    std::string damaged = packed;
    for (size_t i = 0; i < 4; ++i) damaged[at + i] = '\0';
    if (damaged == packed) continue;
    SessionRecord s;
    try {
      decode_session_payload(damaged, s, false);
    } catch (const Error& e) {
      ++refused;
      continue;
    }
    ADD_FAILURE() << "four NULs at byte " << at << " of " << packed.size() << " read back as a whole payload";
  }
  EXPECT_GT(tries, 10);
  EXPECT_GT(refused, 0);
}

// Reliability round 5: a few KB that unpack to "120 million evictions" (all of
// position 0) are refused by the model's shape and the policy's budget before
// any are read, where the bytes alone let a reader allocate 1.4 GB for them.
TEST(StepPayload, DeclaredCountsAreBoundedByTheShapeBeforeAnythingIsAllocated) {
  const size_t declared = 120'000'000;
  std::string raw("\x01\x00\x00", 3);  // one run, layer 0, KV head 0
  size_t n = declared;  // its count, as a varint
  for (; n >= 0x80; n >>= 7) raw += char(0x80 | (n & 0x7f));
  raw += char(n);
  raw += std::string(declared, '\0');  // deltas of 0
  const std::string packed = pack_payload(raw);
  EXPECT_LT(packed.size(), 8'000u);
  PayloadBounds bounds;
  bounds.layers = 22, bounds.heads = 32, bounds.kv_heads = 4;
  bounds.keys = 256 + 1;  // a budget of 256 and one token fed
  bounds.rows = 1;
  SessionRecord s;
  try {
    decode_session_payload(packed, s, false, bounds);
    ADD_FAILURE() << "120 million evictions read back";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a count of 120000000 where at most 257 fit"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.evictions.by_head.empty());

  // Each bound on its own: runs, layers, KV heads, captures, a capture's rows and keys, states.
  const SessionRecord sent = rich_session();  // layers 0 and 2, 2 KV heads, 4 keys, 2 rows, 3 captures, 2 states
  const std::string fits = encode_session_payload(sent);
  PayloadBounds ok;
  ok.layers = 3, ok.heads = 2, ok.kv_heads = 2, ok.keys = 4, ok.rows = 2;
  SessionRecord back;
  decode_session_payload(fits, back, false, ok);
  expect_same(back, sent);
  const auto refused = [&](PayloadBounds b, const char* what) {
    SessionRecord r;
    EXPECT_THROW(decode_session_payload(fits, r, false, b), Error) << what;
  };
  PayloadBounds b = ok;
  b.layers = 2, refused(b, "layer 2 of 2");
  b = ok, b.kv_heads = 1, refused(b, "KV head 1 of 1");
  b = ok, b.keys = 3, refused(b, "4 keys where 3 fit");
  b = ok, b.rows = 1, refused(b, "2 rows where 1 fits");
  b = ok, b.heads = 1, refused(b, "2 heads' probabilities where 1 fits");
}
