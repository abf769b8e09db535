#pragma once
// The bytes of an analyzer's checkpoint (analyzer.h: its whole history at one
// step, which a recording whose spool kept only its newest steps opens on):
// one zstd frame, written as it is made — a 7B run's history is most of a
// GiB, which must not be held twice — and read back whole within a bound.
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "core/base/packed_bytes.h"

namespace h2o {

// Collects a checkpoint's bytes (bytes()) and compresses them on to `out`
// whenever spill() finds more than a few MiB waiting. Throws Error when `out` fails.
class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::ostream& out);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  PackedWriter& bytes() { return raw_; }
  // Compresses what waits if it is much (call between large arrays).
  void spill();
  // Ends the frame. Returns the compressed bytes written in all.
  int64_t finish();

 private:
  void compress(bool end);
  PackedWriter raw_;
  std::ostream& out_;
  struct Context;
  std::unique_ptr<Context> context_;
  std::string buffer_;
  int64_t written_ = 0;
};

// A checkpoint's frame unpacked, refusing (Error) anything that is not one
// zstd frame or unpacks past `max_bytes`; memory grows only as bytes arrive.
std::string unpack_checkpoint(std::string_view frame, size_t max_bytes);

// The most a checkpoint may unpack to when read from a recording.
inline constexpr size_t kMaxCheckpointBytes = size_t(8) << 30;

}  // namespace h2o
