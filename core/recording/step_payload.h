#pragma once
// The heavy part of one session's step in a recording (version 3 on), written
// as one compressed binary payload instead of JSON numbers: its per-head
// evictions (grouped by (layer, KV head), positions delta-coded), its
// attention captures (positions delta-coded, probabilities as 8-bit
// square-root codes) and its layer states (positions delta-coded, scores as
// f32). Whole numbers are LEB128 varints (signed ones zigzagged); the bytes
// are one zstd frame. Version 4 writes the frames as raw bytes after the
// step's JSON line (recording.h); version 3 wrote each as base64 text inside
// the line, a third larger. At Llama-2-7B's shape this is ~40x smaller than
// version 2's JSON and ~20x faster to write.
//
// Probabilities keep 8 bits: p is stored as round(255 sqrt(p)) and read back
// as (code / 255)^2 — a step of 0.004 near 1, finer near 0, below what a
// heatmap's colours or the head view's two decimals show. A live run rounds
// its records so (round_to_recorded) before anything sees them, so the live
// app shows exactly what a replay of its recording shows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/runtime/step_record.h"

namespace h2o {

// The payload of `session`'s evictions by head, captures and states: one zstd frame.
std::string encode_session_payload(const SessionRecord& session);

// What a session's payload may declare, from its recording's header and the
// step's own line: every count is checked against it before anything is
// allocated, so a few bytes that unpack to "120 million evictions" are
// refused, not read into gigabytes. The defaults bound nothing but the bytes.
struct PayloadBounds {
  size_t layers = SIZE_MAX, heads = SIZE_MAX, kv_heads = SIZE_MAX;  // the model's
  size_t keys = SIZE_MAX;  // the most tokens one KV head holds in the step (before its cut)
  size_t rows = SIZE_MAX;  // the most query rows a capture holds: the tokens the step fed
};

// Reads a payload (a zstd frame) back into `session` (by_head evictions,
// attention, layer_states). `skim`: the captures' positions and probabilities
// and every layer state but the first are skipped unread (StepDetail::Skim).
// Throws Error saying what is wrong; allocates no more than `bounds` and the payload's size allow.
void decode_session_payload(std::string_view frame, SessionRecord& session, bool skim,
                            const PayloadBounds& bounds = {});

// A version-3 payload's base64 text as the frame it stands for. Throws Error.
std::string payload_from_base64(std::string_view text);

// The frame apart (for the tests that corrupt the bytes inside it): raw bytes
// to their zstd frame, and back. Throw Error.
std::string pack_payload(std::string_view raw);
std::string unpack_payload(std::string_view frame);

// The most bytes one session's payload may unpack to, or a version-3 payload's
// text hold (a 70B model's capture of every layer is ~2 MiB).
inline constexpr size_t kMaxPayloadBytes = size_t(256) << 20;

// A probability as a recording keeps it (8-bit square-root code, read back).
float recorded_probability(float p);
// Every capture of `record` as a recording keeps it: its probabilities
// rounded so, and no top-k shares where it holds only NaN (none asked).
void round_to_recorded(StepRecord& record);

}  // namespace h2o
