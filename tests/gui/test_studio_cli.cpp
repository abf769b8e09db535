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
#include <csignal>

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
  EXPECT_TRUE(v.out.contains("h2o-studio"));
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

// Architecture, one step: the app's flags take the CLI's backends and bounds
// (the app had no cuda-sim and capped --budget and the policy parts at 2^20
// where the CLI allows 2^24, --kv-group at 2^16 where 4096 is the rule).
TEST(StudioCli, TheBackendsAndBoundsAreTheClisOwn) {
  const StudioRun help = run_studio({"--help"}, QString(), false);
  QProcess cli;
  cli.start(H2O_CLI_BINARY, {"stream", "--help"});
  ASSERT_TRUE(cli.waitForFinished(30000));
  const QString cli_help = QString::fromUtf8(cli.readAllStandardOutput());
  for (const QString* text : {&help.out, &cli_help}) EXPECT_TRUE(text->contains("cpu|cuda|cuda-sim")) << text->toStdString();
  const std::vector<std::pair<QStringList, QString>> cases = {
      {{"--budget", "16777217"}, "--budget: expected a whole number from 2 to 16777216"},
      {{"--sinks", "16777217"}, " to 16777216, got '16777217'"},
      {{"--kv-group", "4097"}, "--kv-group: expected a whole number from 1 to 4096"},
  };
  expect_refused(cases);
  // The emulated CUDA backend runs in the app, as in the CLI (no banner: nothing fell back).
  QTemporaryDir dir;
  const QString shot = dir.filePath("sim.png");
  const StudioRun sim = run_studio({"--backend", "cuda-sim", "--screenshot", shot, "--autoplay-steps", "3"}, dir.path());
  ASSERT_EQ(sim.exit_code, 0) << sim.err.toStdString();
  EXPECT_FALSE(QImage(shot).isNull());
}
