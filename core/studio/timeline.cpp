#include "core/studio/timeline.h"

#include <algorithm>

namespace h2o {

void Timeline::follow() {
  cursor_ = -1;
  window_.reset();
  lines_.reset();
}

std::string Timeline::seek(const Analyzer& analyzer, const TimelineFile& file, int64_t step) {
  if (step >= analyzer.latest_step()) {
    follow();
    return "";
  }
  cursor_ = std::max(analyzer.first_step(), step);
  return load_window(analyzer, file);
}

int64_t Timeline::step_before(const Analyzer& analyzer) const {
  if (analyzer.steps_ingested() == 0) return -1;
  const int64_t from = cursor_ >= 0 ? cursor_ : analyzer.latest_step();
  return std::max(analyzer.first_step(), from - 1);
}

std::string Timeline::advance(const Analyzer& analyzer, const TimelineFile& file) {
  ++cursor_;
  std::string warning;
  try {
    if (window_ && file.index && file.index->has(cursor_)) {
      // A spool whose ring turned is a new file under the same name: open it again.
      const int64_t turns = file.spool ? file.spool->turns() : 0;
      if (lines_ && turns != lines_turns_) lines_.reset();
      if (!lines_) lines_ = std::make_unique<RecordingLines>(file.path, analyzer.header(), file.version);
      lines_turns_ = turns;
      if (file.spool) file.spool->flush();
      window_->add(lines_->read(*file.index, cursor_));
    } else {
      warning = load_window(analyzer, file);
    }
  } catch (const std::exception& e) {
    window_.reset();
    warning = read_failed(e);
  }
  if (cursor_ >= analyzer.latest_step()) follow();
  return warning;
}

std::string Timeline::load_window(const Analyzer& analyzer, const TimelineFile& file) {
  window_.reset();
  lines_.reset();
  // Past the recording's limit there is nothing to read: the snapshot says so.
  if (!file.index || !file.index->has(cursor_)) return "";
  try {
    if (file.spool) file.spool->flush();
    window_ = std::make_unique<CaptureWindow>(
        load_capture_window(file.path, *file.index, file.version, analyzer.header(), cursor_,
                            analyzer.state_whole_entries()));
  } catch (const std::exception& e) {
    return read_failed(e);
  }
  return "";
}

std::string Timeline::read_failed(const std::exception& e) const {
  return "Reading step " + std::to_string(cursor_) + " back failed: " + e.what();
}

namespace {
// The analyzer's window at its newest step, read back whole; an empty one
// (the heatmaps then say the step's attention was not recorded) when that
// fails, so that no skimmed capture is ever drawn.
void restore_whole_window(const RecordingReader& replay, Analyzer& analyzer) {
  CaptureWindow window = analyzer.empty_window();
  try {
    if (analyzer.steps_ingested() > 0)
      window = load_capture_window(replay.path(), replay.index(), replay.version(), analyzer.header(),
                                   analyzer.latest_step(), analyzer.state_whole_entries());
  } catch (const std::exception&) {
    analyzer.restore_live_window(analyzer.empty_window());
    throw;
  }
  analyzer.restore_live_window(std::move(window));
}
}  // namespace

void read_replay_to(RecordingReader& replay, Analyzer& analyzer, int64_t step, const std::function<bool()>& step_once) {
  const int64_t before = analyzer.steps_ingested() > 0 ? analyzer.latest_step() : -1;
  if (before >= step) return;
  replay.skim_below(step);
  try {
    while ((analyzer.steps_ingested() == 0 || analyzer.latest_step() < step) && step_once()) {
    }
  } catch (const std::exception&) {
    replay.skim_below(-1);
    try {
      restore_whole_window(replay, analyzer);
    } catch (const std::exception&) {  // the step's own error says more
    }
    throw;
  }
  replay.skim_below(-1);
  // The first step this read was skimmed if it came before `step`: the window is read again whole.
  const int64_t first_read = before >= 0 ? before + 1 : analyzer.first_step();
  if (analyzer.latest_step() > before && first_read < step) restore_whole_window(replay, analyzer);
}

int tick_interval_ms(bool replay, const ReplayPace& pace, double speed_limit) {
  if (replay) return pace.paced() ? 15 : 0;
  return speed_limit > 0 ? int(1000.0 / speed_limit) : 0;
}

}  // namespace h2o
