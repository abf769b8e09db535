// h2o-studio: the desktop app. Watches MT-Bench stream through the full
// cache, StreamingLLM and H2O side by side (or scores a text teacher-forced),
// with fates, attention heatmaps, survival rasters and heavy-hitter analytics.
//
//   h2o-studio [--model M] [--tokenizer T] [--prompts P] [--replay run.jsonl]
//   h2o-studio --screenshot out.png --autoplay-steps N [--perf] [--window-size 1600x900]
//              [--inspect-token POS]   (headless-friendly; --perf prints frame times on stdout)
#include <QApplication>
#include <QCommandLineParser>
#include <QSettings>
#include <QTimer>
#include <cstdio>

#include "ui/frame_stats.h"
#include "ui/main_window.h"
#include "ui/plot_export.h"
#include "ui/theme.h"

namespace {

void print_perf(const std::vector<double>& frames) {
  // Skip the first frames: they include building fonts and caches once.
  const size_t warm = std::min<size_t>(3, frames.size());
  const h2o::FrameStats s = h2o::frame_stats(std::vector<double>(frames.begin() + long(warm), frames.end()));
  std::printf("h2o-studio perf: frame time (drawing one snapshot on the GUI thread) over %zu frames: "
              "median %.1f ms, p95 %.1f ms, max %.1f ms, mean %.1f ms\n",
              s.frames, s.median_ms, s.p95_ms, s.max_ms, s.mean_ms);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("H2O Studio");
  QApplication::setApplicationName("h2o-studio");
  QApplication::setApplicationVersion(H2O_VERSION);
  h2o::ui::apply_theme(app);

  QCommandLineParser parser;
  parser.setApplicationDescription("H2O Studio: KV-cache eviction (full, StreamingLLM, H2O) made visible.");
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption model({"m", "model"}, "Model file or synthetic:<shape>.", "path");
  const QCommandLineOption tokenizer({"t", "tokenizer"}, "SentencePiece tokenizer.model.", "path");
  const QCommandLineOption prompts("prompts", "MT-Bench question.jsonl.", "path");
  const QCommandLineOption forced("forced-text", "Teacher-forced mode on this text file.", "path");
  const QCommandLineOption replay("replay", "Replay a saved recording (no model needed).", "path");
  const QCommandLineOption budget("budget", "Tokens per KV head for StreamingLLM and H2O.", "n");
  const QCommandLineOption layer("layer", "Layer shown.", "n");
  const QCommandLineOption head("head", "Query head shown (-1: mean over heads).", "n");
  const QCommandLineOption inspect(QStringList{"inspect-token", "inspect"},
                                   "Inspect this stream position (as if clicked; default: follow H2O's top heavy hitter).",
                                   "position");
  const QCommandLineOption size("window-size", "Window size, WIDTHxHEIGHT (default 1800x1000).", "size");
  const QCommandLineOption screenshot("screenshot", "Play, save a screenshot of the window to this PNG and exit.", "file");
  const QCommandLineOption autoplay("autoplay-steps", "Play this many engine steps at start (then pause).", "n");
  const QCommandLineOption perf("perf", "Show and print the frame time (drawing time per snapshot).");
  const QCommandLineOption fresh("no-settings", "Neither read nor write remembered settings.");
  const QCommandLineOption recording_limit("recording-limit",
                                           "Most MiB of the run kept for Save recording, logs and reports "
                                           "(default 512; 0: no limit). Later steps are shown, not recorded.",
                                           "MiB");
  for (const auto& o : {model, tokenizer, prompts, forced, replay, budget, layer, head, inspect, size, screenshot, autoplay,
                        perf, fresh, recording_limit})
    parser.addOption(o);
  parser.process(app);

  const bool shooting = parser.isSet(screenshot);
  h2o::ui::MainWindowOptions options;
  options.argv0 = QString::fromLocal8Bit(argv[0]);
  options.persist = !shooting && !parser.isSet(fresh);
  options.dialogs = !shooting;
  options.perf = parser.isSet(perf);
  options.replay = parser.value(replay);
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split('x');
    const int w = wh.value(0).toInt(), h = wh.value(1).toInt();
    if (wh.size() != 2 || w < 640 || h < 480) {
      std::fprintf(stderr, "h2o-studio: --window-size: expected WIDTHxHEIGHT of at least 640x480, got '%s'\n",
                   parser.value(size).toUtf8().constData());
      return 2;
    }
    options.size = QSize(w, h);
  }
  if (parser.isSet(recording_limit)) {
    bool ok = false;
    const qlonglong mib = parser.value(recording_limit).toLongLong(&ok);
    if (!ok || mib < 0 || mib > (qlonglong(1) << 30)) {
      std::fprintf(stderr, "h2o-studio: --recording-limit: expected MiB between 0 and 2^30, got '%s'\n",
                   parser.value(recording_limit).toUtf8().constData());
      return 2;
    }
    options.recording_limit = qint64(mib) << 20;
  }
  QSettings settings;
  if (parser.isSet(fresh) || shooting) {
    // Only the built-in defaults: a screenshot must not depend on this user's settings.
    QSettings empty(QString(), QSettings::IniFormat);
    empty.clear();
    options.settings = h2o::ui::load_settings(empty);
  } else {
    options.settings = h2o::ui::load_settings(settings);
  }
  h2o::StudioConfig& c = options.settings.config;
  if (parser.isSet(model)) {
    c.model = parser.value(model).toStdString();
    c.tokenizer.clear();
  }
  if (parser.isSet(tokenizer)) c.tokenizer = parser.value(tokenizer).toStdString();
  if (parser.isSet(prompts)) c.prompts = parser.value(prompts).toStdString();
  if (parser.isSet(forced)) {
    c.forced = true;
    c.forced_text = parser.value(forced).toStdString();
  }
  if (parser.isSet(budget)) c.budget = parser.value(budget).toInt();
  if (parser.isSet(layer)) c.capture_layer = parser.value(layer).toInt();
  if (parser.isSet(head)) options.settings.head = parser.value(head).toInt();

  h2o::ui::MainWindow window(options);
  window.show();
  window.start();
  if (parser.isSet(inspect)) window.inspect(parser.value(inspect).toLongLong());

  const int steps = parser.value(autoplay).toInt();
  if (steps > 0) window.playSteps(steps);
  if (shooting) {
    const QString out = parser.value(screenshot);
    QObject::connect(&window, &h2o::ui::MainWindow::errorShown, &app, [](const QString& message) {
      std::fprintf(stderr, "h2o-studio: %s\n", message.toUtf8().constData());
      QApplication::exit(1);
    });
    auto shoot = [&window, &app, out, perf_on = options.perf] {
      // Let the last frame's layout settle before grabbing.
      QTimer::singleShot(100, &app, [&window, out, perf_on] {
        try {
          h2o::ui::save_widget_png(&window, out);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "h2o-studio: %s\n", e.what());
          QApplication::exit(1);
          return;
        }
        if (perf_on) print_perf(window.frameTimes());
        std::fprintf(stderr, "h2o-studio: %s — wrote %s\n", window.windowTitle().toUtf8().constData(),
                     out.toUtf8().constData());
        QApplication::exit(0);
      });
    };
    if (steps > 0) QObject::connect(&window, &h2o::ui::MainWindow::autoplayFinished, &app, shoot);
    else QObject::connect(&window, &h2o::ui::MainWindow::snapshotDrawn, &app, shoot, Qt::SingleShotConnection);
  }
  const int rc = app.exec();
  if (options.perf && !shooting) print_perf(window.frameTimes());
  return rc;
}
