// The main window end to end, offscreen, on a synthetic model and the CPU:
// the panes and curves fill up, exports write valid files, a saved run
// replays to the same numbers, and errors leave the app alive.
#include <gtest/gtest.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QXmlStreamReader>
#include <qcustomplot.h>

#include "core/base/sanitizers.h"
#include "core/recording/recording.h"
#include "tests/gui/gui_test_helpers.h"
#include "ui/plot/plot_export.h"
#include "ui/shell/control_panel.h"
#include "ui/shell/main_window.h"
#include "ui/views/curves_panel.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/heavy_hitter_panel.h"
#include "ui/views/policy_pane.h"
#include "ui/views/raster_plot.h"
#include "ui/views/sparsity_meter.h"
#include "ui/views/token_flow_view.h"
#include "ui/views/token_inspector.h"

using namespace h2o;
using namespace h2o::ui;

using namespace h2o::ui::gui_test;

TEST(MainWindowTest, PanesAndCurvesUpdateWhileStreaming) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 20);
  const auto first = w.lastSnapshot();
  ASSERT_TRUE(first);
  const QString numbers_before = w.panes()[2]->numbersText();
  play(w, 40);
  const auto s = w.lastSnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->steps_ingested, 60);
  EXPECT_GT(s->step, first->step);
  ASSERT_EQ(w.panes().size(), 3u);
  for (PolicyPane* pane : w.panes()) {
    EXPECT_GT(pane->text()->tokenCount(), 0);
    EXPECT_GT(pane->heatmap()->data().rows(), 0);
    EXPECT_GT(pane->heatmap()->data().cols(), 0);
    EXPECT_GT(pane->raster()->cellCount(), 0);
    EXPECT_FALSE(std::isnan(pane->meter()->value()));
  }
  EXPECT_NE(w.panes()[2]->numbersText(), numbers_before);
  // Heatmap column labels never overlap: ticks at least one text line apart.
  for (PolicyPane* pane : w.panes()) {
    QCPAxis* x = pane->heatmap()->xAxis;
    auto ticker = x->ticker().dynamicCast<QCPAxisTickerText>();
    ASSERT_TRUE(ticker);
    ASSERT_GT(ticker->ticks().size(), 1);
    const double line = QFontMetricsF(x->tickLabelFont()).height();
    double previous = -1e9;
    for (double column : ticker->ticks().keys()) {
      const double px = x->coordToPixel(column);
      EXPECT_GE(px - previous, line) << "labels overlap at column " << column;
      previous = px;
    }
  }
  // Nobody clicked: the inspector follows H2O's top heavy hitter.
  EXPECT_TRUE(s->inspection.followed);
  ASSERT_GE(s->inspection.position, 0);
  EXPECT_EQ(s->inspection.policies.size(), 3u);
  EXPECT_TRUE(w.inspector()->detailsText().contains("heavy hitter"));
  EXPECT_GT(w.inspector()->plot()->graphCount(), 0);
  // The analysis tabs are drawn when shown: the heavy hitters' plots fill once their tab is up.
  w.showTab("heavy-hitters");
  ASSERT_EQ(w.heavyHitters()->scoreRank()->graphCount(), 6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(w.curves()->memory()->graph(i)->dataCount(), 0) << "policy " << i;
    EXPECT_GT(w.curves()->throughput()->graph(i)->dataCount(), 0) << "policy " << i;
    EXPECT_GT(w.heavyHitters()->scoreRank()->graph(2 * i)->dataCount(), 0) << "policy " << i;
  }
  // The bounded policies hold fewer tokens than the full cache once past the budget.
  EXPECT_GT(s->panes[0].cached_tokens, s->panes[1].cached_tokens);
  EXPECT_LE(s->panes[2].cached_tokens, 32);
  // StreamingLLM and H2O of one budget hold the same bytes at every step: H2O's line is dashed over
  // StreamingLLM's and says so (it hid it); the full cache's, which parts from them, is its own.
  QCustomPlot* memory = w.curves()->memory();
  ASSERT_EQ(s->kv_bytes[1].y, s->kv_bytes[2].y);
  EXPECT_EQ(memory->graph(2)->name().toStdString(), memory->graph(2)->property("h2o_base_name").toString().toStdString() +
                                                      " (= " + memory->graph(1)->name().toStdString() + ")");
  EXPECT_EQ(memory->graph(2)->pen().style(), Qt::DashLine);
  EXPECT_EQ(memory->graph(1)->pen().style(), Qt::SolidLine);
  EXPECT_FALSE(memory->graph(0)->name().contains("(="));
  EXPECT_GT(w.frameTimes().size(), 0u);
}

TEST(MainWindowTest, ClickingATokenShowsItsHistory) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 10);
  w.inspect(5);
  play(w, 30);
  const auto s = w.lastSnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->inspection.position, 5);
  EXPECT_FALSE(s->inspection.followed);
  ASSERT_EQ(s->inspection.policies.size(), 3u);
  EXPECT_GT(w.inspector()->plot()->graphCount(), 0);
  // Its plot (and token-score-history.pdf) says which token and layer it is.
  auto* title = qobject_cast<QCPTextElement*>(w.inspector()->plot()->plotLayout()->element(0, 0));
  ASSERT_TRUE(title);
  const QString named = title->property("h2o_export").toString();
  EXPECT_TRUE(named.contains(QString("“%1” (position 5, layer %2)").arg(QString::fromStdString(s->inspection.text)).arg(
      s->inspection.policies.front().score_layer)))
      << named.toStdString();
  // StreamingLLM with 28 recent slots evicts position 5 within 40 steps of prefill and answers.
  EXPECT_FALSE(s->inspection.policies[1].evictions.empty());
  EXPECT_TRUE(s->inspection.policies[0].evictions.empty());
}

// A click on a token of the H2O pane's answer names that pane's token, not the
// full pane's token at the same position (each pane's answers are its own).
TEST(MainWindowTest, TheInspectorNamesTheClickedPanesToken) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 40);
  auto s = w.lastSnapshot();
  ASSERT_TRUE(s);
  TokenFlowView* text = w.panes()[2]->text();
  const auto& cells = text->tokens();
  size_t cell = cells.size();  // the newest drawn cell whose token the full pane does not have there
  for (size_t c = 0; c < cells.size(); ++c)
    for (const auto& full : s->panes[0].tokens)
      if (full.position == cells[c].position && full.text != cells[c].text && !text->cellRect(c).isEmpty()) cell = c;
  ASSERT_LT(cell, cells.size()) << "the panes' answers differ somewhere in view";
  const int64_t position = cells[cell].position;
  const std::string clicked = cells[cell].text;
  QMouseEvent press(QEvent::MouseButtonPress, QPointF(text->cellRect(cell).center()), text->mapToGlobal(QPointF(text->cellRect(cell).center())),
                    Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(text, &press);
  play(w, 1);
  s = w.lastSnapshot();
  ASSERT_EQ(s->inspection.position, position);
  EXPECT_EQ(s->inspection.pane, 2);
  EXPECT_EQ(s->inspection.text, clicked);
  const QString details = w.inspector()->detailsText();
  EXPECT_TRUE(details.contains(QString("“%1”").arg(QString::fromStdString(clicked).toHtmlEscaped()))) << details.toStdString();
  EXPECT_TRUE(details.contains("of H2O's stream")) << details.toStdString();
  EXPECT_TRUE(details.contains("its own answer has")) << details.toStdString();
}

TEST(MainWindowTest, ExportsWriteValidPngPdfSvgAndCsv) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 30);
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QStringList files =
      w.exportPlots(dir.path(), {int(PlotFormat::Png), int(PlotFormat::Pdf), int(PlotFormat::Svg)});
  // Every plot with data, in three formats; a stream run has no perplexity or agreement to show.
  EXPECT_EQ(files.size(), int(w.reportPlots().size()) * 3);
  EXPECT_FALSE(files.contains("perplexity.png"));
  EXPECT_FALSE(files.contains("agreement.pdf"));
  for (const char* name : {"h2o-heatmap", "h2o-survival-whole", "h2o-survival-detail", "kv-memory", "score-rank"})
    for (const char* suffix : {".png", ".pdf", ".svg"}) EXPECT_TRUE(files.contains(QString(name) + suffix)) << name << suffix;
  const QString base = dir.filePath("kv-memory");
  EXPECT_EQ(head_of(base + ".png", 8), QByteArray("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(head_of(base + ".pdf", 5), QByteArray("%PDF-"));
  QFile svg(base + ".svg");
  ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
  QXmlStreamReader xml(&svg);
  ASSERT_TRUE(xml.readNextStartElement());
  EXPECT_EQ(xml.name(), QStringLiteral("svg"));
  // Each plot also saves itself from its right-click menu.
  for (const auto& [name, plot] : w.plots())
    EXPECT_EQ(plot->contextMenuPolicy(), Qt::CustomContextMenu) << name.toStdString();
  // No temporary files left behind.
  for (const QString& name : QDir(dir.path()).entryList(QDir::Files)) EXPECT_FALSE(name.contains(".tmp")) << name.toStdString();

  QSignalSpy written(&w, &MainWindow::fileWritten);
  const QString logs = dir.filePath("logs");
  w.exportLogs(logs);
  ASSERT_TRUE(written.wait(30000));
  EXPECT_TRUE(head_of(logs + "/steps.csv", 200).startsWith("step,phase,prompt,policy,"));
  EXPECT_TRUE(head_of(logs + "/evictions.csv", 200).startsWith("step,policy,layer,kv_head,position"));
  EXPECT_TRUE(head_of(logs + "/steps.jsonl", 1).startsWith("{"));
  EXPECT_TRUE(QFile::exists(logs + "/manifest.json"));

  QSignalSpy report(&w, &MainWindow::reportWritten);
  const QString report_dir = dir.filePath("report");
  w.exportReport(report_dir);
  ASSERT_TRUE(report.wait(30000));
  const QByteArray summary = head_of(report_dir + "/summary.md", 1 << 20);
  EXPECT_TRUE(summary.startsWith("# H2O Studio run report"));
  EXPECT_TRUE(summary.contains("streaming(sinks=4,window=28)"));
  EXPECT_EQ(head_of(report_dir + "/window.png", 4), QByteArray("\x89PNG", 4));
  // The teaching views, widgets rather than plots, are pictured too, readable though never shown.
  for (const char* view : {"/head-view.png", "/model-view.png"}) {
    const QImage picture(report_dir + view);
    EXPECT_GE(picture.width(), 1200) << view;
    EXPECT_GE(picture.height(), 600) << view;
    EXPECT_TRUE(summary.contains(QByteArray(view + 1))) << view << " listed in summary.md";
  }
  EXPECT_EQ(head_of(report_dir + "/score-rank.png", 4), QByteArray("\x89PNG", 4));
  EXPECT_TRUE(head_of(report_dir + "/steps.csv", 5).startsWith("step,"));
  EXPECT_TRUE(QFile::exists(report_dir + "/run.h2orec.jsonl"));
  // The report folder appeared whole, by one rename: no staging folder is left.
  for (const QString& name : QDir(dir.path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
    EXPECT_FALSE(name.contains(".partial")) << name.toStdString();

  // A report never writes into an existing folder, and one that cannot be
  // written at all leaves nothing behind; the window carries on either way.
  QSignalSpy errors(&w, &MainWindow::errorShown);
  w.exportReport(report_dir);
  EXPECT_EQ(errors.count(), 1);
  QFile blocker(dir.filePath("a-file"));
  ASSERT_TRUE(blocker.open(QIODevice::WriteOnly));
  blocker.close();
  const QString impossible = dir.filePath("a-file/report");
  w.exportReport(impossible);
  EXPECT_EQ(errors.count(), 2);
  EXPECT_FALSE(QFileInfo::exists(impossible));
  EXPECT_TRUE(QDir(dir.path()).entryList({"*.partial*"}, QDir::AllEntries).isEmpty());
}

TEST(MainWindowTest, AtItsLimitTheRecordingKeepsItsNewestStepsAndTheRunGoesOn) {
  QTemporaryDir dir;
  MainWindowOptions o = synthetic_options();
  o.recording_limit = 1 << 20;  // some hundreds of this run's steps
  MainWindow w(o);
  w.show();
  QSignalSpy warnings(&w, &MainWindow::warningShown);
  w.start();
  const int played = play_until_recording_banner(w, 20);
  ASSERT_GT(played, 0) << "the recording never reached its limit";
  ASSERT_EQ(warnings.count(), 1);
  const QString warning = warnings.first().first().toString();
  EXPECT_TRUE(warning.startsWith("The recording reached its limit: from now on it keeps its newest steps in full")) << warning.toStdString();
  ASSERT_TRUE(w.lastSnapshot());
  EXPECT_EQ(w.lastSnapshot()->step, played - 1) << "the run must go on past the recording's limit";

  // What is saved: a checkpoint of the whole history, then every step after it to the newest, without the totals.
  const QString path = dir.filePath("run.h2orec.jsonl");
  QSignalSpy written(&w, &MainWindow::fileWritten);
  w.saveRecording(path);
  ASSERT_TRUE(written.wait(30000));
  EXPECT_LE(QFileInfo(path).size(), o.recording_limit + 4096) << "the spool's size and the view written into line 1";
  RecordingReader reader(path.toStdString());
  EXPECT_GT(reader.checkpoint_step(), 5);
  int64_t steps = 0, first_step = -1, final_step = -1;
  while (auto record = reader.next()) {
    if (first_step < 0) first_step = record->step;
    ++steps, final_step = record->step;
  }
  EXPECT_EQ(first_step, reader.checkpoint_step() + 1);
  EXPECT_EQ(final_step, played - 1);
  EXPECT_EQ(steps, played - first_step);
  EXPECT_TRUE(reader.totals().is_null());
}

TEST(MainWindowTest, RecordedRunReplaysToTheSameNumbers) {
  QTemporaryDir dir;
  const QString path = dir.filePath("run.h2orec.jsonl");
  std::shared_ptr<const StudioSnapshot> live;
  std::vector<QString> live_numbers;
  {
    MainWindow w(synthetic_options());
    w.show();
    w.start();
    play(w, 45);
    live = w.lastSnapshot();
    for (PolicyPane* pane : w.panes()) live_numbers.push_back(pane->numbersText());
    QSignalSpy written(&w, &MainWindow::fileWritten);
    w.saveRecording(path);
    ASSERT_TRUE(written.wait(30000));
  }
  MainWindowOptions o = synthetic_options();
  o.settings.config.model = "/nonexistent/model.bin";  // the replay must not need it
  o.replay = path;
  MainWindow r(o);
  r.show();
  QSignalSpy loaded(&r, &MainWindow::modelLoaded);
  r.start();
  ASSERT_TRUE(loaded.wait(30000));
  EXPECT_TRUE(loaded.first().first().toString().contains("replay"));
  play(r, 45);
  const auto replayed = r.lastSnapshot();
  ASSERT_TRUE(live && replayed);
  EXPECT_EQ(replayed->step, live->step);
  EXPECT_EQ(replayed->engine_seconds, live->engine_seconds);
  ASSERT_EQ(replayed->panes.size(), live->panes.size());
  for (size_t i = 0; i < live->panes.size(); ++i) {
    const PaneSnapshot &a = live->panes[i], &b = replayed->panes[i];
    EXPECT_EQ(a.cached_tokens, b.cached_tokens);
    EXPECT_EQ(a.live_bytes, b.live_bytes);
    EXPECT_EQ(a.tokens_per_s, b.tokens_per_s);
    EXPECT_EQ(a.stream_length, b.stream_length);
    EXPECT_EQ(a.heatmap.values.size(), b.heatmap.values.size());
    // The same stretches (their cells follow each window's pixels; the analyzer's test compares cells).
    EXPECT_EQ(a.overview.positions(), b.overview.positions());
    EXPECT_EQ(a.overview.steps(), b.overview.steps());
    EXPECT_EQ(a.detail.first_position, b.detail.first_position);
    EXPECT_EQ(a.score_rank.score, b.score_rank.score);
    EXPECT_TRUE(a.sparsity == b.sparsity || (std::isnan(a.sparsity) && std::isnan(b.sparsity)));
    EXPECT_EQ(r.panes()[i]->numbersText().toStdString(), live_numbers[i].toStdString());
  }
  for (size_t i = 0; i < live->kv_bytes.size(); ++i) EXPECT_EQ(live->kv_bytes[i].y, replayed->kv_bytes[i].y);
}

TEST(MainWindowTest, BadModelShowsAnErrorAndTheAppCarriesOn) {
  MainWindowOptions o = synthetic_options();
  o.settings.config.model = "/nonexistent/model.bin";
  MainWindow w(o);
  w.show();
  QSignalSpy errors(&w, &MainWindow::errorShown);
  w.start();
  ASSERT_TRUE(errors.wait(30000));
  EXPECT_TRUE(errors.first().first().toString().contains("/nonexistent/model.bin"));
  // A good model afterwards still runs.
  MainWindowOptions good = synthetic_options();
  MainWindow again(good);
  again.show();
  again.start();
  play(again, 5);
  EXPECT_TRUE(again.lastSnapshot());
}

TEST(MainWindowTest, SessionOutOfKvMemoryStopsAloneAndSaysWhy) {
  // 1 MiB for the three caches: the full cache (1280 bytes a token here)
  // cannot pass ~600 tokens; StreamingLLM and H2O never need more than their budget.
  MainWindowOptions o = synthetic_options();
  o.settings.config.kv_limit_mib = 1;
  MainWindow w(o);
  w.show();
  QSignalSpy warnings(&w, &MainWindow::warningShown);
  QSignalSpy errors(&w, &MainWindow::errorShown);
  w.start();
  play(w, 400);
  EXPECT_EQ(errors.count(), 0);
  ASSERT_EQ(warnings.count(), 1);
  const QString warning = warnings.first().first().toString();
  EXPECT_TRUE(warning.startsWith("full stopped: out of KV memory")) << warning.toStdString();
  EXPECT_TRUE(warning.contains("the other sessions go on")) << warning.toStdString();
  const auto s = w.lastSnapshot();
  ASSERT_TRUE(s);
  ASSERT_EQ(s->panes.size(), 3u);
  EXPECT_NE(s->panes[0].stopped.find("out of KV memory"), std::string::npos);
  EXPECT_TRUE(w.panes()[0]->numbersText().contains("stopped:"));
  for (int i : {1, 2}) {
    EXPECT_TRUE(s->panes[size_t(i)].stopped.empty());
    EXPECT_GT(s->panes[size_t(i)].stream_length, s->panes[0].stream_length + 24);
  }
}

TEST(MainWindowTest, MissingBackendIsReportedAndTheRunGoesOnOnTheCpu) {
  // This build may or may not have CUDA (and a GPU): either the run starts on
  // it, or the app says why not, naming the backend, and streams on the CPU.
  MainWindowOptions o = synthetic_options();
  o.settings.config.backend = "cuda";
  MainWindow w(o);
  w.show();
  QSignalSpy warnings(&w, &MainWindow::warningShown);
  QSignalSpy errors(&w, &MainWindow::errorShown);
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.start();
  ASSERT_TRUE(loaded.wait(30000)) << "no model loaded";
  EXPECT_TRUE(errors.isEmpty());
  if (!warnings.isEmpty()) {
    const QString message = warnings.first().first().toString();
    EXPECT_TRUE(message.contains("cuda")) << message.toStdString();
    EXPECT_TRUE(message.contains("CPU instead")) << message.toStdString();
  }
  play(w, 5);
  ASSERT_TRUE(w.lastSnapshot());
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, 5);
  EXPECT_TRUE(w.isVisible());
}

TEST(MainWindowTest, GuiThreadStaysResponsiveUnderFullLoad) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 2);  // loaded
  // Measure the largest gap between 10 ms ticks of a GUI-thread timer while the engine runs flat out.
  QElapsedTimer clock;
  clock.start();
  qint64 last = 0, worst = 0;
  QTimer ticker;
  QObject::connect(&ticker, &QTimer::timeout, [&] {
    const qint64 now = clock.elapsed();
    worst = std::max(worst, now - last);
    last = now;
  });
  ticker.start(10);
  play(w, 400);
  ticker.stop();
  EXPECT_GT(w.frameTimes().size(), 3u);
  // Under AddressSanitizer a frame's drawing takes several times as long (530 ms once on the 2-core
  // CI machine, 2026-11-29): the bound is for the thread never waiting on the engine, not for speed.
#if H2O_ASAN
  constexpr qint64 kMostBlockedMs = 1500;
#else
  constexpr qint64 kMostBlockedMs = 500;
#endif
  EXPECT_LT(worst, kMostBlockedMs) << "the GUI thread was blocked for " << worst << " ms";
}
