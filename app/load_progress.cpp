// See load_progress.h.
#include "app/load_progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace h2o::cli {

std::shared_ptr<const Model> load_model_with_progress(const std::string& path) {
  if (isatty(fileno(stderr)) != 1) return load_model(path);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::mutex line;  // the loader's threads call in together: one writes the line, the others go on
  double shown = -1;
  bool done_shown = false;
  const auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const LoadProgress report = [&](int64_t done, int64_t total) {
    std::unique_lock lock(line, std::try_to_lock);
    if (!lock.owns_lock() && done < total) return true;
    if (!lock.owns_lock()) lock.lock();  // the last chunk's line is always written
    if (done_shown) return true;         // a thread late with an earlier count: the line is closed
    const double now = seconds();
    if (done < total && now - shown < 0.25) return true;
    shown = now;
    std::fprintf(stderr, "\r%s: making weights %d %%", path.c_str(), int(done * 100 / std::max<int64_t>(1, total)));
    if (done == total) std::fprintf(stderr, " (%.1f s)\n", now), done_shown = true;
    std::fflush(stderr);
    return true;
  };
  try {
    return load_model(path, report);
  } catch (...) {
    if (shown >= 0 && !done_shown) std::fputc('\n', stderr);  // the error's line starts a line of its own
    throw;
  }
}

}  // namespace h2o::cli
