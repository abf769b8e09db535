// See encode_progress.h.
#include "app/encode_progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/base/text_file.h"

namespace h2o::cli {

TextFile::TextFile(const std::string& path) {
  // Anything else (a pipe, a folder) goes to read_text_file, which reads a pipe and names a folder.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) mapped_ = MappedFile::open(path);
  else read_ = read_text_file(path);
}

void TextFile::release_before(size_t offset) const {
  if (!mapped_) return;
  offset = std::min(offset, mapped_->size());
  if (offset <= released_) return;
  reclaim_pages(mapped_->data() + released_, offset - released_);  // only what was not given back yet
  const auto page = size_t(sysconf(_SC_PAGESIZE));
  released_ = offset / page * page;
}

void encode_with_progress(const Tokenizer& tokenizer, std::string_view text, const char* what, const EncodeSink& sink,
                          const TextFile* file) {
  constexpr size_t kQuietBelow = size_t(4) << 20;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // A terminal sees the line move, four times a second at most; a log file
  // (not a terminal) gets only the last state, not hundreds of \r updates.
  const bool terminal = isatty(fileno(stderr)) == 1;
  double shown = -1;
  size_t reached = 0;
  const auto report = [&](size_t done, size_t total) {
    reached = done;
    if (file) file->release_before(done);
    if (total < kQuietBelow) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (done < total && (!terminal || seconds - shown < 0.25)) return;
    shown = seconds;
    const double mb = 1e-6 * double(done);
    std::fprintf(stderr, "%s%s: tokenizing %.1f of %.1f MB, %.1f MB/s", terminal ? "\r" : "", what, mb, 1e-6 * double(total),
                 seconds > 0 ? mb / seconds : 0.0);
    if (done == total) std::fprintf(stderr, " (%.1f s)\n", seconds);
    std::fflush(stderr);
  };
  encode_parts(tokenizer, text, sink, report);
  // The sink had all it needed before the end: close the line a terminal was shown.
  if (terminal && shown >= 0 && reached < text.size()) std::fprintf(stderr, " (enough)\n");
}

}  // namespace h2o::cli
