// h2o-studio: the desktop app. Watches MT-Bench stream through the full
// cache, StreamingLLM, H2O and TOVA side by side (or scores a text
// teacher-forced), with fates, attention heatmaps, whole-stream survival
// rasters, a timeline, heavy-hitter analytics and bertviz-style views.
//
//   h2o-studio [--model M] [--tokenizer T] [--prompts P] [--replay run.jsonl] [run flags] [file…]
//   h2o-studio --screenshot out.png --autoplay-steps N [--perf] [--window-size 1600x900]
//              [--inspect-token POS]   (headless-friendly; --perf prints frame times on stdout)
//   h2o-studio --play --quit-after SECONDS --stats-interval S   (scripts/soak_studio.sh)
//
// --help and --version need no display: they are answered before any window
// system is touched. With no display at all, the app runs offscreen.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QSettings>
#include <QSocketNotifier>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "core/analysis/needle_watch.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/version.h"
#include "core/flags/run_flags.h"
#include "core/policy/policy.h"
#include "ui/plot/plot_export.h"
#include "ui/plot/theme.h"
#include "ui/shell/frame_stats.h"
#include "ui/shell/main_window.h"

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

// A flag of the run's table (core/flags/run_flags.h), with the help the app shows.
QCommandLineOption table_option(std::string_view name, QStringList names = {}) {
  const h2o::RunFlag& f = h2o::run_flag(name);
  names << QString::fromStdString(f.name);
  QString help = QString::fromStdString(h2o::flag_help(f, h2o::kApp)) + ".";
  help[0] = help[0].toUpper();  // a sentence, as the app's own flags' help
  if (f.kind == h2o::FlagKind::Switch) return QCommandLineOption(names, help);
  return QCommandLineOption(names, help, QString::fromStdString(f.value_name));
}

struct Options {
  QCommandLineOption model = table_option("model", {"m"});
  QCommandLineOption tokenizer = table_option("tokenizer", {"t"});
  QCommandLineOption prompts = table_option("prompts");
  QCommandLineOption forced{"forced-text", "Teacher-forced mode on this text file.", "path"};
  QCommandLineOption replay{"replay", "Replay a saved recording (no model needed).", "path"};
  QCommandLineOption backend = table_option("backend");
  QCommandLineOption threads = table_option("threads");
  QCommandLineOption policies = table_option("policies");
  QCommandLineOption kv_bits = table_option("kv-bits");
  QCommandLineOption kv_group = table_option("kv-group");
  QCommandLineOption kv_residual = table_option("kv-residual");
  QCommandLineOption kv_limit = table_option("kv-limit");
  QCommandLineOption budget = table_option("budget");
  QCommandLineOption slack = table_option("slack");
  // One flag per policy parameter the controls show (core/studio/studio_params.h): --sinks, --heavy, --recent.
  std::vector<std::pair<const h2o::StudioParam*, QCommandLineOption>> params = [] {
    std::vector<std::pair<const h2o::StudioParam*, QCommandLineOption>> out;
    for (const h2o::StudioParam& p : h2o::studio_params()) out.emplace_back(&p, table_option(p.name));
    return out;
  }();
  QCommandLineOption rolling = table_option("position-rolling");
  QCommandLineOption layer{"layer", "Layer shown.", "n"};
  QCommandLineOption head{"head", "Query head shown (-1: mean over heads).", "n"};
  QCommandLineOption inspect{QStringList{"inspect-token", "inspect"},
                             "Inspect this stream position (as if clicked; default: follow H2O's top heavy hitter).",
                             "position"};
  QCommandLineOption size{"window-size", "Window size, WIDTHxHEIGHT (default 1800x1000, or the screen where smaller).", "size"};
  QCommandLineOption screenshot{"screenshot", "Play, save a screenshot of the window to this PNG and exit.", "file"};
  QCommandLineOption autoplay{"autoplay-steps", "Play this many engine steps at start (then pause).", "n"};
  QCommandLineOption play{"play", "Play at start, without end."};
  QCommandLineOption quit_after{"quit-after", "Quit after this many seconds (soak runs).", "seconds"};
  QCommandLineOption stats{"stats-interval", "Print the analyzer's memory figures on stdout every N seconds.", "seconds"};
  QCommandLineOption perf{"perf", "Show and print the frame time (drawing time per snapshot)."};
  QCommandLineOption presentation{"presentation", "Start in presentation mode (full screen, larger text and lines)."};
  QCommandLineOption theme{"theme", "dark (default) or light (projectors, print).", "name"};
  QCommandLineOption scale{"ui-scale", "Text and line scale, 0.75 to 3 (default 1).", "factor"};
  QCommandLineOption tab{"tab", "Analysis tab shown: curves, inspector, heavy-hitters, head-view, model-view or needle.", "name"};
  QCommandLineOption needle{"needle", "Plant this sentence into the live stream (the Needle tab; \"the X is Y\" is asked back as \"What is the X? The X is\" -> \"Y\").", "text"};
  QCommandLineOption needle_at{"needle-at", "Plant the needle when the run reaches this step (default 0: as the run starts).", "step"};
  QCommandLineOption needle_question{"needle-question", "The question an ask feeds (default: from the needle).", "text"};
  QCommandLineOption needle_answer{"needle-answer", "The answer an ask scores (default: from the needle).", "text"};
  QCommandLineOption ask_every{"ask-every", "Ask for the needle every N steps once it is in the stream (0: only when asked).", "n"};
  QCommandLineOption enlarge{"enlarge-tab", "Give the analysis tabs most of the height (the teaching views)."};
  QCommandLineOption fresh{"no-settings", "Neither read nor write remembered settings."};
  QCommandLineOption recording_limit = table_option("recording-limit");
  void add_to(QCommandLineParser& parser) const {
    parser.setApplicationDescription(
        "H2O Studio: KV-cache eviction (full, StreamingLLM, H2O, TOVA) made visible, side by side.");
    parser.addHelpOption();
    parser.addVersionOption();
    // The desktop entry's %f: a double-clicked recording (its MIME type), or a model.
    parser.addPositionalArgument("file", "A model (.gguf, .bin, config.json, a folder), tokenizer or recording to open, "
                                         "as if dropped onto the window.", "[file...]");
    for (const auto* o : {&model, &tokenizer, &prompts, &forced, &replay, &backend, &threads, &policies, &kv_bits,
                          &kv_group, &kv_residual, &kv_limit, &budget, &slack})
      parser.addOption(*o);
    for (const auto& [name, o] : params) parser.addOption(o);
    for (const auto* o : {&rolling, &layer, &head, &inspect, &size, &screenshot, &autoplay, &play,
                          &quit_after, &stats, &perf, &presentation, &theme, &scale, &tab, &enlarge, &fresh, &recording_limit,
                          &needle, &needle_at, &needle_question, &needle_answer, &ask_every})
      parser.addOption(*o);
  }
};

bool asks_only_for_text(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version") return true;
  }
  return false;
}

// One line on stderr, exit 2: how every bad flag ends.
[[noreturn]] void bad_flag(const QString& flag, const QString& why) {
  std::fprintf(stderr, "h2o-studio: %s: %s\n", flag.toUtf8().constData(), why.toUtf8().constData());
  std::exit(2);
}

// A flag of the run's table, checked against its bounds (or choices) there.
std::string table_value(const QCommandLineParser& parser, const QCommandLineOption& o) {
  const h2o::RunFlag& flag = h2o::run_flag(o.names().last().toStdString());
  const std::string text = parser.value(o).toStdString();
  if (const std::string problem = h2o::flag_problem(flag, text); !problem.empty())
    bad_flag("--" + QString::fromStdString(flag.name), QString::fromStdString(problem));
  return text;
}
int table_int(const QCommandLineParser& parser, const QCommandLineOption& o) {
  return int(std::stoll(table_value(parser, o)));  // the table's bounds fit an int (MiB, tokens, threads)
}

int int_flag(const QCommandLineParser& parser, const QCommandLineOption& o, int lo, int hi) {
  bool ok = false;
  const int v = parser.value(o).toInt(&ok);
  if (!ok || v < lo || v > hi)
    bad_flag("--" + o.names().last(), QString("expected a whole number from %1 to %2, got '%3'").arg(lo).arg(hi).arg(parser.value(o)));
  return v;
}

// SIGTERM and SIGINT end the app as a quit would (the spool is removed, the
// settings kept): the handler only writes to a pipe the event loop watches.
int g_signal_pipe[2] = {-1, -1};
volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
  const char byte = 1;
  [[maybe_unused]] const auto n = ::write(g_signal_pipe[1], &byte, 1);
}

// The window's own flags: what it shows and keeps, its size, the recording's limit.
h2o::ui::MainWindowOptions window_flags(const QCommandLineParser& parser, const Options& opts, const char* argv0) {
  const bool shooting = parser.isSet(opts.screenshot);
  h2o::ui::MainWindowOptions options;
  options.argv0 = QString::fromLocal8Bit(argv0);
  options.persist = !shooting && !parser.isSet(opts.fresh) && !parser.isSet(opts.quit_after);
  options.dialogs = !shooting && !parser.isSet(opts.quit_after);
  options.perf = parser.isSet(opts.perf);
  options.replay = parser.value(opts.replay);
  for (const QString& file : parser.positionalArguments()) options.open << QFileInfo(file).absoluteFilePath();
  options.presentation = parser.isSet(opts.presentation);
  options.tab = parser.value(opts.tab);
  if (parser.isSet(opts.tab) &&
      !QStringList{"curves", "inspector", "heavy-hitters", "head-view", "model-view", "needle"}.contains(options.tab))
    bad_flag("--tab", "expected curves, inspector, heavy-hitters, head-view, model-view or needle, got '" + options.tab + "'");
  options.needle = parser.value(opts.needle).trimmed();
  options.needle_question = parser.value(opts.needle_question).trimmed();
  options.needle_answer = parser.value(opts.needle_answer).trimmed();
  if (parser.isSet(opts.needle) && options.needle.isEmpty()) bad_flag("--needle", "is empty: give a sentence to plant");
  for (const auto* o : {&opts.needle_at, &opts.needle_question, &opts.needle_answer})
    if (parser.isSet(*o) && options.needle.isEmpty()) bad_flag("--" + o->names().last(), "needs --needle");
  if (options.needle_question.isEmpty() != options.needle_answer.isEmpty())
    bad_flag(options.needle_question.isEmpty() ? "--needle-question" : "--needle-answer",
             "give the question and the answer together (or neither: from the needle)");
  if (!options.needle.isEmpty() && options.needle_question.isEmpty() &&
      !h2o::question_of_needle(options.needle.toStdString()))
    bad_flag("--needle", "is not of the form \"the X is Y\": give --needle-question and --needle-answer");
  if (parser.isSet(opts.needle_at)) options.needle_at = int_flag(parser, opts.needle_at, 0, 1 << 30);
  if (parser.isSet(opts.ask_every)) options.ask_every = int_flag(parser, opts.ask_every, 0, 1 << 30);
  options.enlarge_tab = parser.isSet(opts.enlarge);
  if (parser.isSet(opts.size)) {
    const QStringList wh = parser.value(opts.size).split('x');
    const int w = wh.value(0).toInt(), h = wh.value(1).toInt();
    if (wh.size() != 2 || w < 640 || h < 480)
      bad_flag("--window-size", "expected WIDTHxHEIGHT of at least 640x480, got '" + parser.value(opts.size) + "'");
    options.size = QSize(w, h);
  }
  if (parser.isSet(opts.recording_limit)) options.recording_limit = qint64(table_int(parser, opts.recording_limit)) << 20;
  return options;
}

// The run's flags over the remembered settings (or the built-in defaults where
// nothing is remembered): inputs, backend, panes, budget, KV precision, view, look.
void read_run_flags(const QCommandLineParser& parser, const Options& opts, h2o::ui::MainWindowOptions& options) {
  QSettings settings;
  if (!options.persist) {
    // Only the built-in defaults: a screenshot or a soak must not depend on this user's settings.
    QSettings empty(QString(), QSettings::IniFormat);
    empty.clear();
    options.settings = h2o::ui::load_settings(empty);
  } else {
    options.settings = h2o::ui::load_settings(settings);
  }
  h2o::StudioConfig& c = options.settings.config;
  if (parser.isSet(opts.model)) {
    c.model = parser.value(opts.model).toStdString();
    c.tokenizer.clear();
  }
  if (parser.isSet(opts.tokenizer)) c.tokenizer = parser.value(opts.tokenizer).toStdString();
  if (parser.isSet(opts.prompts)) c.prompts = parser.value(opts.prompts).toStdString();
  if (parser.isSet(opts.forced)) {
    c.forced = true;
    c.forced_text = parser.value(opts.forced).toStdString();
  }
  // Bounds and choices are the table's (core/flags/run_flags.h), as h2o-cli's.
  if (parser.isSet(opts.backend)) c.backend = table_value(parser, opts.backend);
  if (parser.isSet(opts.threads)) c.threads = table_int(parser, opts.threads);
  if (parser.isSet(opts.policies)) {
    c.policies.clear();
    for (const QString& p : parser.value(opts.policies).split(',', Qt::SkipEmptyParts)) c.policies.push_back(p.trimmed().toStdString());
  }
  if (parser.isSet(opts.kv_bits)) c.kv_bits = parser.value(opts.kv_bits).toStdString();
  if (parser.isSet(opts.kv_group)) c.kv_group = table_int(parser, opts.kv_group);
  if (parser.isSet(opts.kv_residual)) c.kv_residual = table_int(parser, opts.kv_residual);
  if (parser.isSet(opts.kv_limit)) c.kv_limit_mib = table_int(parser, opts.kv_limit);
  if (parser.isSet(opts.budget)) c.budget = table_int(parser, opts.budget);
  if (parser.isSet(opts.slack)) c.slack = table_int(parser, opts.slack);
  for (const auto& [p, option] : opts.params)
    if (parser.isSet(option)) c.params[p->name] = table_int(parser, option);
  if (parser.isSet(opts.rolling)) c.rolling = true;
  if (parser.isSet(opts.layer)) c.capture_layer = int_flag(parser, opts.layer, 0, 4096);
  if (parser.isSet(opts.head)) options.settings.head = int_flag(parser, opts.head, -1, 4096);
  if (parser.isSet(opts.theme)) {
    bool ok = false;
    h2o::ui::theme_from_name(parser.value(opts.theme), &ok);
    if (!ok) bad_flag("--theme", "expected dark or light, got '" + parser.value(opts.theme) + "'");
    options.settings.theme = parser.value(opts.theme).toLower().toStdString();
  }
  if (parser.isSet(opts.scale)) {
    bool ok = false;
    const double v = parser.value(opts.scale).toDouble(&ok);
    if (!ok || v < 0.75 || v > 3) bad_flag("--ui-scale", "expected a factor from 0.75 to 3, got '" + parser.value(opts.scale) + "'");
    options.settings.ui_scale = v;
  }
}

// --screenshot: once the autoplayed steps are drawn (or the first frame, with
// none), saves the window to `out` and quits; an error shown quits with 1.
void shoot_when_played(h2o::ui::MainWindow& window, QApplication& app, const QString& out, bool perf, bool after_autoplay) {
  QObject::connect(&window, &h2o::ui::MainWindow::errorShown, &app, [](const QString& message) {
    std::fprintf(stderr, "h2o-studio: %s\n", message.toUtf8().constData());
    QApplication::exit(1);
  });
  auto shoot = [&window, &app, out, perf_on = perf] {
    // Let the last frame's layout settle before grabbing.
    QTimer::singleShot(300, &app, [&window, out, perf_on] {
      window.drainSnapshots();
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
  if (after_autoplay) QObject::connect(&window, &h2o::ui::MainWindow::autoplayFinished, &app, shoot);
  else QObject::connect(&window, &h2o::ui::MainWindow::snapshotDrawn, &app, shoot, Qt::SingleShotConnection);
}

}  // namespace

int main(int argc, char** argv) {
  const Options opts;
  if (asks_only_for_text(argc, argv)) {
    // No window system needed to print the help or the version.
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName("h2o-studio");
    QCoreApplication::setApplicationVersion(h2o::version());
    QCommandLineParser parser;
    opts.add_to(parser);
    parser.process(app);  // prints and exits
    return 0;
  }
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    std::fprintf(stderr, "h2o-studio: no display: running offscreen (--screenshot, --play and --quit-after still work)\n");
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("H2O Studio");
  QGuiApplication::setDesktopFileName(H2O_APP_ID);
  QApplication::setApplicationName("h2o-studio");
  QApplication::setApplicationVersion(h2o::version());
  h2o::ui::apply_theme(app);

  QCommandLineParser parser;
  opts.add_to(parser);
  parser.process(app);

  h2o::ui::MainWindowOptions options = window_flags(parser, opts, argv[0]);
  read_run_flags(parser, opts, options);
  for (const std::string& line : options.settings.refused) std::fprintf(stderr, "h2o-studio: %s\n", line.c_str());
  const bool shooting = parser.isSet(opts.screenshot);
  // Flags that cannot make a run say so now, in one line, not in a window later.
  if (options.replay.isEmpty()) {
    try {
      h2o::studio_policies(options.settings.config);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "h2o-studio: %s\n", e.what());
      return 2;
    }
  }

  if (::pipe(g_signal_pipe) == 0) {
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
  }
  QSocketNotifier signals_in(g_signal_pipe[0], QSocketNotifier::Read);
  QObject::connect(&signals_in, &QSocketNotifier::activated, &app, [] { QApplication::quit(); });

  h2o::ui::MainWindow window(options);
  window.show();
  window.start();
  if (parser.isSet(opts.inspect)) window.inspect(parser.value(opts.inspect).toLongLong());
  if (parser.isSet(opts.stats)) window.setStatsInterval(int_flag(parser, opts.stats, 1, 86400));
  if (parser.isSet(opts.quit_after)) {
    const int seconds = int_flag(parser, opts.quit_after, 1, 7 * 86400);
    QTimer::singleShot(seconds * 1000, &app, [] { QApplication::quit(); });
  }

  const int steps = parser.isSet(opts.autoplay) ? int_flag(parser, opts.autoplay, 0, 1 << 30) : 0;
  if (steps > 0) window.playSteps(steps);
  else if (parser.isSet(opts.play)) window.playSteps(1 << 30);
  if (shooting) shoot_when_played(window, app, parser.value(opts.screenshot), options.perf, steps > 0);
  const int rc = app.exec();
  if (options.perf && !shooting) print_perf(window.frameTimes());
  return g_signal ? 128 + int(g_signal) : rc;
}
