#include "core/recording/checkpoint_stream.h"

#include <zstd.h>

#include "core/base/error.h"

namespace h2o {

namespace {
constexpr int kZstdLevel = 1;                  // as the step payloads: speed first
constexpr size_t kSpillBytes = size_t(4) << 20;  // raw bytes held before they are compressed
}  // namespace

struct CheckpointWriter::Context {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ~Context() { ZSTD_freeCCtx(cctx); }
};

CheckpointWriter::CheckpointWriter(std::ostream& out) : out_(out), context_(std::make_unique<Context>()) {
  if (!context_->cctx) throw Error("checkpoint: no compression context");
  ZSTD_CCtx_setParameter(context_->cctx, ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(context_->cctx, ZSTD_c_checksumFlag, 1);  // a damaged checkpoint fails its read
  buffer_.resize(ZSTD_CStreamOutSize());
}

CheckpointWriter::~CheckpointWriter() = default;

void CheckpointWriter::spill() {
  if (raw_.bytes().size() >= kSpillBytes) compress(false);
}

int64_t CheckpointWriter::finish() {
  compress(true);
  return written_;
}

void CheckpointWriter::compress(bool end) {
  const std::string_view raw = raw_.bytes();
  ZSTD_inBuffer in{raw.data(), raw.size(), 0};
  const ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;
  for (;;) {
    ZSTD_outBuffer out{buffer_.data(), buffer_.size(), 0};
    const size_t left = ZSTD_compressStream2(context_->cctx, &out, &in, mode);
    if (ZSTD_isError(left)) throw Error(std::string("checkpoint: compression failed: ") + ZSTD_getErrorName(left));
    out_.write(buffer_.data(), std::streamsize(out.pos));
    written_ += int64_t(out.pos);
    if (!out_) throw Error("checkpoint: cannot write");
    if (end ? left == 0 : in.pos == in.size) break;
  }
  raw_.clear();
}

std::string unpack_checkpoint(std::string_view frame, size_t max_bytes) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!context) throw Error("checkpoint: no decompression context");
  std::string out;
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  for (;;) {
    if (out.size() >= max_bytes) throw Error("checkpoint: unpacks past " + std::to_string(max_bytes) + " bytes");
    const size_t at = out.size();
    out.resize(std::min(max_bytes, std::max<size_t>(at * 2, ZSTD_DStreamOutSize())));
    ZSTD_outBuffer o{out.data() + at, out.size() - at, 0};
    const size_t left = ZSTD_decompressStream(context.get(), &o, &in);
    if (ZSTD_isError(left)) throw Error("checkpoint: corrupt compressed data");
    out.resize(at + o.pos);
    if (left == 0) break;
    // All read, room left, and the frame not done: it was cut short.
    if (in.pos == in.size && o.pos < o.size) throw Error("checkpoint: its frame is cut short");
  }
  if (in.pos != in.size) throw Error("checkpoint: bytes after its frame");
  return out;
}

}  // namespace h2o
