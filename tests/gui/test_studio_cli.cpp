// The h2o-studio binary's headless flags, run as a user would under the
// offscreen platform: --screenshot with --autoplay-steps plays, writes the PNG
// and exits 0; --perf prints the frame-time statistics on stdout; with no
// assets the app falls back to a built-in synthetic model.
#include <gtest/gtest.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QThread>
#include <algorithm>
#include <csignal>

#include "core/base/version.h"
#include "core/flags/run_flags.h"

namespace {

struct StudioRun {
  int exit_code = -1;
  QString out, err;
};

// `display`: false runs it as on a machine with no display at all (no
// QT_QPA_PLATFORM, no DISPLAY, no WAYLAND_DISPLAY).
StudioRun run_studio(const QStringList& args, const QString& assets, bool display = true) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (display) {
    env.insert("QT_QPA_PLATFORM", "offscreen");
  } else {
    for (const char* v : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(v);
  }
  env.insert("H2O_ASSETS", assets);
  // A desktop session's runtime folder, so that Qt does not warn about it on stderr.
  static QTemporaryDir runtime;
  QFile::setPermissions(runtime.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
  env.insert("XDG_RUNTIME_DIR", runtime.path());
  p.setProcessEnvironment(env);
  p.start(H2O_STUDIO_BINARY, args);
  StudioRun r;
  if (!p.waitForFinished(120000)) {
    p.kill();
    p.waitForFinished();
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// Each (flags, words) is refused before any window: exit 2, one line with the words.
void expect_refused(const std::vector<std::pair<QStringList, QString>>& cases) {
  for (const auto& [args, says] : cases) {
    const StudioRun r = run_studio(args + QStringList{"--screenshot", "/dev/null"}, QString());
    EXPECT_EQ(r.exit_code, 2) << args.join(' ').toStdString() << ": " << r.err.toStdString();
    EXPECT_TRUE(r.err.contains(says)) << args.join(' ').toStdString() << ": " << r.err.toStdString();
    EXPECT_EQ(r.err.trimmed().count('\n'), 0) << r.err.toStdString();
  }
}

}  // namespace

TEST(StudioCli, ScreenshotAfterAutoplayWithPerfOnStdout) {
  QTemporaryDir dir;
  const QString shot = dir.filePath("shot.png");
  // An empty assets folder: the first run must still stream something.
  const StudioRun r = run_studio({"--screenshot", shot, "--autoplay-steps", "40", "--perf", "--window-size", "1280x800"},
                           dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err.toStdString();
  EXPECT_TRUE(r.err.contains("synthetic:stories260K")) << r.err.toStdString();
  const QImage image(shot);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(1280, 800));
  EXPECT_TRUE(r.out.contains("frame time")) << r.out.toStdString();
  for (const char* stat : {"median", "p95", "max"}) EXPECT_TRUE(r.out.contains(stat)) << stat;
}

TEST(StudioCli, DefaultsToTheTrainedModelInTheAssets) {
  const QString assets = qEnvironmentVariable("H2O_ASSETS", H2O_DEFAULT_ASSETS);
  if (!QFile::exists(assets + "/kjv-1M.bin") || !QFile::exists(assets + "/kjv-tok2k.model"))
    GTEST_SKIP() << "kjv-1M.bin / kjv-tok2k.model not in " << assets.toStdString();
  QTemporaryDir dir;
  const QString shot = dir.filePath("shot.png");
  const StudioRun r = run_studio({"--screenshot", shot, "--autoplay-steps", "20"}, assets);
  ASSERT_EQ(r.exit_code, 0) << r.err.toStdString();
  EXPECT_TRUE(r.err.contains("kjv-1M.bin")) << r.err.toStdString();
  EXPECT_FALSE(QImage(shot).isNull());
}

TEST(StudioCli, BadWindowSizeIsOneLineAndNonZero) {
  const StudioRun r = run_studio({"--screenshot", "/dev/null", "--window-size", "big"}, QString());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.contains("--window-size")) << r.err.toStdString();
}

TEST(StudioCli, HelpNeedsNoDisplayAndListsTheRunFlags) {
  const StudioRun r = run_studio({"--help"}, QString(), false);
  ASSERT_EQ(r.exit_code, 0) << r.err.toStdString();
  for (const char* flag : {"--threads", "--policies", "--budget", "--sinks", "--heavy", "--recent", "--position-rolling",
                           "--layer", "--head", "--replay", "--presentation", "--theme", "--quit-after"})
    EXPECT_TRUE(r.out.contains(flag)) << flag;
  const StudioRun v = run_studio({"--version"}, QString(), false);
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.trimmed().toStdString(), std::string("h2o-studio ") + h2o::version());  // what help2man reads
}

TEST(StudioCli, WithNoDisplayItRunsOffscreen) {
  QTemporaryDir dir;
  const QString shot = dir.filePath("shot.png");
  const StudioRun r = run_studio({"--screenshot", shot, "--autoplay-steps", "5", "--threads", "1", "--policies",
                                  "streaming,h2o", "--sinks", "2", "--heavy", "6", "--recent", "8", "--budget", "16",
                                  "--position-rolling"},
                                 dir.path(), false);
  ASSERT_EQ(r.exit_code, 0) << r.err.toStdString();
  EXPECT_TRUE(r.err.contains("offscreen")) << r.err.toStdString();
  EXPECT_FALSE(QImage(shot).isNull());
}

TEST(StudioCli, BadRunFlagsAreOneLineAndExit2) {
  const std::vector<std::pair<QStringList, QString>> cases = {
      {{"--policies", "full,lru"}, "unknown policy"},
      {{"--policies", "h2o"}, "--policies: choose 2 to 4 policies for side by side, got 1"},
      {{"--policies", "full,streaming,h2o,tova,h2o@2bit"}, "--policies: choose 2 to 4 policies for side by side, got 5"},
      {{"--threads", "many"}, "--threads"},
      {{"--kv-bits", "2", "--kv-residual", "0"}, "--kv-residual"},  // 0 is the settings' "not given", never a flag's value
      {{"--sinks", "-1"}, "--sinks"},
      {{"--budget", "32", "--sinks", "2", "--heavy", "50", "--recent", "8"}, "--budget"},
      {{"--theme", "neon"}, "--theme"},
      {{"--backend", "tpu"}, "--backend"},
  };
  expect_refused(cases);
}

TEST(StudioCli, TheSpoolGoesWithTheAppOnSigtermAndSigint) {
  for (int sig : {SIGTERM, SIGINT}) {
    QTemporaryDir dir;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("TMPDIR", dir.path());  // where the spool goes
    env.insert("H2O_ASSETS", dir.path());
    p.setProcessEnvironment(env);
    p.start(H2O_STUDIO_BINARY, {"--no-settings", "--threads", "1", "--play", "--model", "synthetic:stories260K"});
    ASSERT_TRUE(p.waitForStarted(10000));
    const auto spools = [&] { return QDir(dir.path()).entryList({"h2o-studio-*.jsonl"}, QDir::Files); };
    QElapsedTimer t;
    t.start();
    while (spools().isEmpty() && t.elapsed() < 20000) QThread::msleep(50);
    ASSERT_FALSE(spools().isEmpty()) << "no spool while playing";
    QThread::msleep(300);
    ::kill(pid_t(p.processId()), sig);
    ASSERT_TRUE(p.waitForFinished(20000));
    EXPECT_EQ(p.exitStatus(), QProcess::NormalExit) << "signal " << sig;
    EXPECT_EQ(p.exitCode(), 128 + sig);
    EXPECT_TRUE(spools().isEmpty()) << "left behind: " << spools().join(' ').toStdString();
  }
}

// Architecture, one step: the run's flags are declared once (core/flags/run_flags.h).
// h2o-studio --help and h2o-cli stream --help state each shared flag's help,
// bounds or backends and default as the table does — the same words, the
// default apart only where the table says why — and both refuse a value
// out of bounds with the same words.
QString one_spaced(QString text) { return text.simplified(); }

TEST(StudioCli, TheSharedFlagsAreTheTablesInBothFrontEnds) {
  const StudioRun help = run_studio({"--help"}, QString(), false);
  ASSERT_EQ(help.exit_code, 0) << help.err.toStdString();
  QProcess cli;
  cli.start(H2O_CLI_BINARY, {"stream", "--help"});
  ASSERT_TRUE(cli.waitForFinished(30000));
  const QString app_help = one_spaced(help.out), cli_help = one_spaced(QString::fromUtf8(cli.readAllStandardOutput()));
  int shared = 0;
  for (const h2o::RunFlag& f : h2o::run_flags()) {
    if (!f.taken_by(h2o::kApp) || !(f.taken_by(h2o::kCliRun) || f.taken_by(h2o::kCliStream))) continue;
    ++shared;
    const std::string app_text = h2o::flag_help(f, h2o::kApp), cli_text = h2o::flag_help(f, h2o::kCliRun);
    // The app's help starts each as a sentence (a capital), the words are the table's.
    EXPECT_TRUE(app_help.contains(QString::fromStdString(app_text).simplified(), Qt::CaseInsensitive))
        << f.name << ": " << app_text;
    EXPECT_TRUE(cli_help.contains(QString::fromStdString(cli_text).simplified())) << f.name << ": " << cli_text;
    const bool app_default_differs = std::any_of(f.defaults.begin(), f.defaults.end(), [](const auto& d) {
      return d.taker == h2o::kApp && !d.why.empty();
    });
    if (!app_default_differs) {
      EXPECT_EQ(app_text, cli_text) << f.name;
    }
  }
  EXPECT_GE(shared, 14);
  for (const QString* text : {&app_help, &cli_help}) EXPECT_TRUE(text->contains("cpu|cuda|cuda-sim")) << text->toStdString();
  const std::vector<std::pair<QStringList, QString>> cases = {
      {{"--budget", "16777217"}, "--budget: 16777217 is more than the tokens a KV head may hold, 16777216"},
      {{"--sinks", "16777217"}, "--sinks: 16777217 is more than the tokens a KV head may hold, 16777216"},
      {{"--kv-group", "4097"}, "--kv-group: 4097 is more than 4096 (1 to 4096)"},
      {{"--budget", "0"}, "--budget: expected a whole number from 1 to 16777216, got '0'"},
      {{"--kv-limit", "-1"}, "--kv-limit: expected a whole number from 0 to 1073741824, got '-1'"},
      {{"--backend", "tpu"}, "--backend: expected cpu|cuda|cuda-sim, got 'tpu'"},
  };
  expect_refused(cases);
  for (const auto& [args, says] : cases) {
    QProcess refused;
    refused.start(H2O_CLI_BINARY, QStringList{"stream"} + args);
    ASSERT_TRUE(refused.waitForFinished(30000));
    const QString err = QString::fromUtf8(refused.readAllStandardError());
    EXPECT_NE(refused.exitCode(), 0) << args.join(' ').toStdString();
    EXPECT_TRUE(err.contains(says)) << args.join(' ').toStdString() << ": " << err.toStdString();
  }
  // The emulated CUDA backend runs in the app, as in the CLI (no banner: nothing fell back).
  QTemporaryDir dir;
  const QString shot = dir.filePath("sim.png");
  const StudioRun sim = run_studio({"--backend", "cuda-sim", "--screenshot", shot, "--autoplay-steps", "3"}, dir.path());
  ASSERT_EQ(sim.exit_code, 0) << sim.err.toStdString();
  EXPECT_FALSE(QImage(shot).isNull());
}
