// See encode_progress.h.
#include "app/encode_progress.h"

#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace h2o::cli {

std::vector<int> encode_with_progress(const Tokenizer& tokenizer, const std::string& text, const char* what) {
  constexpr size_t kQuietBelow = size_t(4) << 20;
  if (text.size() < kQuietBelow) return encode_in_parts(tokenizer, text, nullptr);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // A terminal sees the line move, four times a second at most; a log file
  // (not a terminal) gets only the last state, not hundreds of \r updates.
  const bool terminal = isatty(fileno(stderr)) == 1;
  double shown = -1;
  const auto report = [&](size_t done, size_t total) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (done < total && (!terminal || seconds - shown < 0.25)) return;
    shown = seconds;
    const double mb = 1e-6 * double(done);
    std::fprintf(stderr, "%s%s: tokenizing %.1f of %.1f MB, %.1f MB/s", terminal ? "\r" : "", what, mb, 1e-6 * double(total),
                 seconds > 0 ? mb / seconds : 0.0);
    if (done == total) std::fprintf(stderr, " (%.1f s)\n", seconds);
    std::fflush(stderr);
  };
  return encode_in_parts(tokenizer, text, report);
}

}  // namespace h2o::cli
