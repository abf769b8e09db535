#pragma once
// The app's settings: what the controls hold, remembered with QSettings. Keys
// nobody has set fall back to StudioConfig's own initialisers (the one table
// of defaults); empty input paths fall back to the demo's defaults
// (h2o::default_inputs), so a first run always has something to stream.
#include <QString>
#include <vector>

#include "core/studio/opened_files.h"
#include "core/studio/studio_setup.h"

class QSettings;

namespace h2o::ui {

struct StudioSettings {
  StudioConfig config;
  int head = -1;             // query head shown, -1: mean over heads
  double speed_limit = 0;    // steps per second, 0: unlimited
  std::string theme = "dark";  // "dark" or "light" (projectors, print)
  double ui_scale = 1.0;       // fonts and lines (presentation mode: larger)
  // The panes' answers against the usual size, as Ctrl+wheel over one left them: in the window,
  // and presenting (0: presentation mode's own, kPresentationTextScale).
  double text_scale = 1.0, presentation_text_scale = 0;
  // Remembered run settings a run would refuse (one policy, an unknown one, kv_bits=3), each
  // left at its default: one line apiece naming the settings file, the key and why.
  std::vector<std::string> refused;
};

// Steps a second a live run plays at in presentation mode while no speed limit
// was chosen: about the pace the audience reads the answers at (unlimited,
// the kjv-1M demo ran 4,130 steps in 15 s). A limit chosen before or during
// the talk is kept; leaving presentation mode goes back to unlimited.
inline constexpr double kPresentationPace = 8;

// The answer text's size while presenting, against the panes' usual size (beside the app's own
// presentation scale, 1.3): about 20 px lines at 1280x720, read from the back of a room, with the
// panes still side by side. Ctrl+wheel over the text makes it larger or smaller from there.
inline constexpr double kPresentationTextScale = 1.6;

// Never refuses to start: a value out of bounds, or one the run's checks refuse, falls back to
// its default (said in `refused` for the latter), so a bad file cannot lock the user out.
StudioSettings load_settings(QSettings& settings);
void save_settings(QSettings& settings, const StudioSettings& s);
// Fills empty model/tokenizer/prompts and the teacher-forced text from the
// assets found beside `argv0` (the text also when a model was chosen).
void fill_default_inputs(StudioConfig& config, const QString& argv0);

// The File menu's recent models, newest first (key "recent_models": one "model<TAB>tokenizer" a line).
std::vector<RecentModel> load_recent_models(QSettings& settings);
void save_recent_models(QSettings& settings, const std::vector<RecentModel>& recent);

}  // namespace h2o::ui
