// The h2o-studio binary's headless flags, run as a user would under the
// offscreen platform: --screenshot with --autoplay-steps plays, writes the PNG
// and exits 0; --perf prints the frame-time statistics on stdout; with no
// assets the app falls back to a built-in synthetic model.
#include <gtest/gtest.h>

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>

namespace {

struct StudioRun {
  int exit_code = -1;
  QString out, err;
};

StudioRun run_studio(const QStringList& args, const QString& assets) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.insert("H2O_ASSETS", assets);
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
