// The controls, offscreen: settings are remembered (in a temporary QSettings
// scope), model loading shows its progress and can be cancelled, play /
// pause / step / reset / speed limit do what they say, and teacher-forced
// mode fills the perplexity and agreement curves.
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QRegularExpression>
#include <QTest>
#include <qcustomplot.h>

#include "tests/gui/gui_test_helpers.h"
#include "ui/shell/control_panel.h"
#include "ui/views/curves_panel.h"
#include "ui/shell/main_window.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/policy_pane.h"
#include "ui/views/token_flow_view.h"

using namespace h2o;
using namespace h2o::ui;
using namespace h2o::ui::gui_test;

namespace {

// QSettings() in this scope reads and writes an INI file in a fresh folder.
class TemporarySettingsScope {
 public:
  TemporarySettingsScope() {
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir_.path());
  }
  ~TemporarySettingsScope() { QSettings::setDefaultFormat(QSettings::NativeFormat); }
  QString path() const { return dir_.path(); }

 private:
  QTemporaryDir dir_;
};

}  // namespace

TEST(ControlsTest, SettingsAreRememberedAcrossWindows) {
  TemporarySettingsScope scope;
  MainWindowOptions o = synthetic_options();
  o.persist = true;
  o.settings.config.kv_group = 8;  // the tiny model's head_dim
  o.settings.config.kv_residual = 16;
  {
    MainWindow w(o);
    w.show();
    w.start();
    play(w, 2);
    auto* budget = w.controls()->findChild<QSpinBox*>("budget");
    auto* seed = w.controls()->findChild<QSpinBox*>("seed");
    ASSERT_TRUE(budget && seed);
    QSignalSpy loaded(&w, &MainWindow::modelLoaded);
    budget->setValue(48);
    seed->setValue(7);
    auto* bits = w.controls()->findChild<QComboBox*>("kv_bits");
    ASSERT_TRUE(bits);
    bits->setCurrentIndex(bits->findData(QString("4")));
    // The change is applied (and saved) once the spin-box clicks settle.
    ASSERT_TRUE(loaded.wait(10000)) << "the new budget did not restart the run";
    QSettings settings;
    EXPECT_EQ(settings.value("budget").toInt(), 48);
    EXPECT_EQ(settings.value("seed").toInt(), 7);
    EXPECT_EQ(settings.value("kv_bits").toString(), "4");
    EXPECT_EQ(settings.value("model").toString(), "synthetic:stories260K");
  }
  // A new window started from what QSettings holds gets the same values back.
  QSettings settings;
  const StudioSettings remembered = load_settings(settings);
  EXPECT_EQ(remembered.config.budget, 48);
  EXPECT_EQ(remembered.config.seed, 7u);
  EXPECT_EQ(remembered.config.kv_bits, "4");  // the precision, from the same field list as recordings' JSON
  EXPECT_EQ(remembered.config.kv_group, 8);
  EXPECT_EQ(remembered.config.model, "synthetic:stories260K");
  MainWindowOptions again = synthetic_options();
  again.settings = remembered;
  MainWindow w(again);
  EXPECT_EQ(w.controls()->config().budget, 48);
  EXPECT_TRUE(QFile::exists(settings.fileName())) << settings.fileName().toStdString();
  EXPECT_TRUE(settings.fileName().startsWith(scope.path()));
}

// The answers' size a Ctrl+wheel chose, in the window and presenting, comes back with the next
// start (it was lost at every restart); a remembered size past the bounds is brought inside them.
TEST(ControlsTest, TheAnswersTextSizeIsRememberedPerMode) {
  TemporarySettingsScope scope;
  {
    MainWindowOptions o = synthetic_options();
    o.persist = true;
    MainWindow w(o);
    w.show();
    w.start();
    play(w, 2);
    emit w.panes()[0]->text()->textScaleRequested(1.9);
    EXPECT_DOUBLE_EQ(w.panes()[1]->text()->textScale(), 1.9) << "every pane alike";
    w.close();
  }
  QSettings settings;
  StudioSettings remembered = load_settings(settings);
  EXPECT_DOUBLE_EQ(remembered.text_scale, 1.9);
  EXPECT_DOUBLE_EQ(remembered.presentation_text_scale, kPresentationTextScale) << "presenting: untouched";
  MainWindowOptions again = synthetic_options();
  again.settings = remembered;
  MainWindow w(again);
  w.show();
  w.start();
  for (PolicyPane* pane : w.panes()) EXPECT_DOUBLE_EQ(pane->text()->textScale(), 1.9);
  settings.setValue("text_scale", 40.0);
  settings.setValue("presentation_text_scale", 0.01);
  remembered = load_settings(settings);
  EXPECT_DOUBLE_EQ(remembered.text_scale, TokenFlowView::kMostTextScale);
  EXPECT_DOUBLE_EQ(remembered.presentation_text_scale, TokenFlowView::kLeastTextScale);
}

TEST(ControlsTest, DefaultsUseEveryCoreAndTheDemoInputs) {
  TemporarySettingsScope scope;
  QSettings empty;
  const StudioSettings s = load_settings(empty);
  EXPECT_EQ(s.config.threads, 0) << "0 = auto: every core but one";
  EXPECT_TRUE(s.config.model.empty()) << "empty: the demo's default model";
  EXPECT_EQ(s.config.backend, "cpu");
  EXPECT_EQ(s.config.kv_group, 0) << "0: G and R shaped for the model and the budget";
  StudioConfig filled = s.config;
  fill_default_inputs(filled, QString());
  EXPECT_FALSE(filled.model.empty()) << "a first run always has a model (assets or synthetic)";
  // Earlier versions saved the fixed G 32, R 64 on every run: read back, they are "not given".
  QSettings old;
  old.setValue("kv_group", 32);
  old.setValue("kv_residual", 64);
  const StudioSettings migrated = load_settings(old);
  EXPECT_EQ(migrated.config.kv_group, 0);
  EXPECT_EQ(migrated.config.kv_residual, 0);
  old.setValue("kv_group", 16);  // a value somebody chose stays
  EXPECT_EQ(load_settings(old).config.kv_group, 16);
}

// A settings file holding what a run refuses (one policy, an unknown one, 3- or 5-bit KV)
// must not lock the user out: each such setting falls back to its default, one line naming the
// file and the key says so, and what the file holds that a run takes is kept.
TEST(ControlsTest, RefusedRememberedSettingsFallBackAndNameTheFile) {
  TemporarySettingsScope scope;
  const StudioConfig defaults;
  for (const auto& [key, value] : std::vector<std::pair<QString, QString>>{
           {"policies", "h2o"}, {"policies", "full,nonsense"}, {"kv_bits", "3"}, {"kv_bits", "2,5"}}) {
    QSettings settings;
    settings.clear();
    settings.setValue(key, value);
    settings.setValue("budget", 48);  // a good setting beside the bad one stays
    const StudioSettings s = load_settings(settings);
    ASSERT_EQ(s.refused.size(), 1u) << key.toStdString() << " = " << value.toStdString();
    const std::string& line = s.refused.front();
    EXPECT_NE(line.find(settings.fileName().toStdString()), std::string::npos) << line;
    EXPECT_NE(line.find("remembered " + key.toStdString() + " '" + value.toStdString() + "'"), std::string::npos) << line;
    EXPECT_EQ(s.config.policies, defaults.policies) << line;
    EXPECT_EQ(s.config.kv_bits, defaults.kv_bits) << line;
    EXPECT_EQ(s.config.kv_group, defaults.kv_group) << line;
    EXPECT_EQ(s.config.budget, 48) << line;
    EXPECT_NO_THROW(studio_engine_options(s.config)) << line;
  }
  QSettings good;
  good.clear();
  good.setValue("policies", "full,tova");
  EXPECT_TRUE(load_settings(good).refused.empty());
  EXPECT_EQ(load_settings(good).config.policies, (std::vector<std::string>{"full", "tova"}));
}

TEST(ControlsTest, LoadingShowsProgressAndCanBeCancelled) {
  MainWindowOptions o = synthetic_options();
  o.settings.config.model = "synthetic:stories110M";  // ~0.7 s to build: long enough to cancel
  MainWindow w(o);
  w.show();
  QSignalSpy cancelled(&w, &MainWindow::loadCancelled);
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.start();
  auto* cancel = w.findChild<QPushButton*>("cancel_load");
  auto* label = w.findChild<QLabel*>("load_label");
  ASSERT_TRUE(cancel && label);
  ASSERT_TRUE(wait_until([&] { return cancel->isVisible(); }, 5000)) << "no progress shown while loading";
  EXPECT_TRUE(label->text().startsWith("Loading synthetic:stories110M"));
  // How far the weights are made, in the status bar and where each pane will draw (it said "no run").
  ASSERT_TRUE(wait_until([&] { return label->text().contains(" % · "); }, 5000)) << label->text().toStdString();
  auto* bar = w.findChild<QProgressBar*>();
  ASSERT_TRUE(bar);
  EXPECT_EQ(bar->maximum(), 1000) << "a fraction, not a busy bar";
  for (PolicyPane* pane : w.panes()) {
    EXPECT_TRUE(pane->numbersText().startsWith("loading synthetic:stories110M … ")) << pane->numbersText().toStdString();
    EXPECT_TRUE(pane->heatmap()->shownNote().startsWith("loading … ")) << pane->heatmap()->shownNote().toStdString();
  }
  cancel->click();
  ASSERT_TRUE(cancelled.wait(5000));
  EXPECT_FALSE(cancel->isVisible());
  for (PolicyPane* pane : w.panes()) EXPECT_TRUE(pane->numbersText().startsWith("no model loaded")) << pane->numbersText().toStdString();
  QTest::qWait(1500);  // the loader finishes meanwhile; its model must be dropped
  EXPECT_TRUE(loaded.isEmpty()) << "a cancelled load still started a run";
  EXPECT_FALSE(w.lastSnapshot());
}

TEST(ControlsTest, PauseStepResetAndSpeedLimit) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 3);
  ASSERT_EQ(w.lastSnapshot()->steps_ingested, 3);

  // A frame drawn before the step may still arrive first (slow builds): wait for the stepped one, then for none more.
  w.findChild<QAction*>("step")->trigger();
  EXPECT_TRUE(wait_for_snapshot(w, [](const StudioSnapshot& s) { return s.steps_ingested == 4; }, 10000)) << "no step";
  QTest::qWait(300);
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, 4) << "one step, exactly";

  // A frame of the old run may still be on its way when Reset is pressed: wait for the new run's first.
  w.findChild<QAction*>("reset")->trigger();
  EXPECT_TRUE(wait_for_snapshot(w, [](const StudioSnapshot& s) { return s.steps_ingested == 0; }, 10000))
      << "reset starts the run again";

  // 20 steps a second for about a second, then pause.
  auto* speed = w.findChild<QDoubleSpinBox*>("speed");
  ASSERT_TRUE(speed);
  speed->setValue(20);
  QElapsedTimer playing;
  playing.start();
  w.findChild<QAction*>("play")->trigger();
  QTest::qWait(1000);
  // The same action pauses; the window hears it after the paused frame.
  QAction* play_action = w.findChild<QAction*>("play");
  play_action->trigger();
  ASSERT_TRUE(wait_until([&] { return play_action->text() == "Play"; }, 10000)) << "did not pause";
  const double seconds = double(playing.elapsed()) / 1000.0;
  const int64_t played = w.lastSnapshot()->steps_ingested;
  EXPECT_GE(played, 5);
  // At most 20 a second for as long as it played (a slow build, the
  // sanitizers', hears the pause later), and the steps in flight.
  EXPECT_LE(played, int64_t(20 * seconds) + 5) << "the speed limit was not honoured over " << seconds << " s";
  QTest::qWait(300);
  QApplication::processEvents();
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, played) << "still stepping after pause";
}

namespace {
// Teacher-forced mode on a short text written into `dir`.
MainWindowOptions forced_options(const QTemporaryDir& dir) {
  const QString text = dir.filePath("text.txt");
  QFile f(text);
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  for (int i = 0; i < 20; ++i) f.write("In the beginning the model read the same words again and again. ");
  MainWindowOptions o = synthetic_options();
  o.settings.config.forced = true;
  o.settings.config.forced_text = text.toStdString();
  return o;
}
}  // namespace

TEST(ControlsTest, TeacherForcedModeFillsPerplexityAndAgreement) {
  QTemporaryDir dir;
  MainWindowOptions o = forced_options(dir);
  MainWindow w(o);
  w.show();
  w.start();
  play(w, 60);
  const auto s = w.lastSnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->mode, "forced");
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(w.curves()->perplexity()->graph(i)->dataCount(), 0) << "policy " << i;
    EXPECT_GT(w.curves()->agreement()->graph(i)->dataCount(), 0) << "policy " << i;
    EXPECT_FALSE(std::isnan(s->panes[size_t(i)].perplexity));
    EXPECT_TRUE(w.panes()[size_t(i)]->numbersText().contains("ppl"));
    // No decoding here: the rate shown is that of the tokens fed and scored, never "0.0 tok/s".
    EXPECT_GT(s->panes[size_t(i)].tokens_per_s, 0.0f) << "policy " << i;
    EXPECT_FALSE(w.panes()[size_t(i)]->numbersText().contains("<b>0.0</b> tok/s")) << "policy " << i;
  }
  EXPECT_TRUE(w.curves()->perplexity()->isVisible() || w.curves()->agreement()->isVisible());
  // The full cache agrees with itself; the bounded caches are measured against it.
  EXPECT_DOUBLE_EQ(s->panes[0].agreement, 1.0);
  EXPECT_TRUE(w.panes()[2]->numbersText().contains("agree"));
  // The KL plot: each policy's running mean KL from the full cache, the full cache's own zero.
  ASSERT_EQ(s->kl.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_GT(w.curves()->kl()->graph(i)->dataCount(), 0) << "policy " << i;
  ASSERT_FALSE(s->kl[0].y.empty());
  EXPECT_NEAR(s->kl[0].y.back(), 0.0, 1e-9);
  EXPECT_NEAR(s->kl[2].y.back(), s->panes[2].mean_kl, 1e-9);
  EXPECT_GT(s->kl[2].y.back(), 0.0);
  // Every quality plot marks the trained context where the memory plot does, in its x range.
  ASSERT_GT(s->context, 0);
  for (QCustomPlot* plot : {w.curves()->memory(), w.curves()->perplexity(), w.curves()->agreement(), w.curves()->kl()}) {
    EXPECT_TRUE(w.curves()->contextMarkerShown(plot)) << plot->plotLayout()->elementCount();
    EXPECT_EQ(w.curves()->contextMarkerAt(plot), double(s->context));
    EXPECT_GT(plot->xAxis->range().upper, double(s->context));
  }
}

TEST(ControlsTest, TeacherForcedHeadersKeepTheirQualityFiguresInAGrid) {
  QTemporaryDir dir;
  MainWindowOptions o = forced_options(dir);
  o.settings.config.policies = {"full", "streaming", "h2o", "tova"};
  o.size = QSize(1280, 720);
  MainWindow w(o);
  w.show();
  w.start();
  play(w, 40);
  for (PolicyPane* pane : w.panes()) {
    const QString shown = pane->numbersText().remove(QRegularExpression("<[^>]*>"));
    EXPECT_TRUE(shown.contains("ppl")) << shown.toStdString();
    if (pane->policy().evicts()) {
      EXPECT_TRUE(shown.contains("agree")) << shown.toStdString();
    }
    // Whole on its line: what does not fit (the stream's length) is left to the tooltip.
    QFont bold = pane->numbersLabel()->font();
    bold.setBold(true);
    EXPECT_LE(QFontMetrics(bold).horizontalAdvance(shown), pane->numbersLabel()->width()) << shown.toStdString();
    EXPECT_TRUE(pane->numbersLabel()->toolTip().contains("in stream"));
  }
}

// A quantised model opens like any other, and the status bar keeps its type
// mix in view (the details, in the label's tooltip).
TEST(ControlsTest, TheStatusBarShowsTheWeightTypeMix) {
  MainWindowOptions o = synthetic_options();
  o.settings.config.model = "synthetic:test-256:dtype=q4_k_m";
  MainWindow w(o);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.start();
  ASSERT_TRUE(loaded.wait(20000)) << "the Q4_K_M model did not load";
  auto* types = w.findChild<QLabel*>("model_types");
  ASSERT_TRUE(types);
  EXPECT_EQ(types->text(), "Q4_K_M");
  EXPECT_TRUE(types->isVisible());
  EXPECT_TRUE(types->toolTip().contains("Q4_K_M")) << types->toolTip().toStdString();
  play(w, 3);
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, 3);
}

TEST(ControlsTest, APaneWithItsOwnPrecisionHasABoxThatTakesItOutAndPutsItBack) {
  ControlPanel panel;
  StudioConfig c = panel.config();
  c.policies = {"full", "h2o", "h2o@2bit"};
  panel.setConfig(c);
  auto* own = panel.findChild<QCheckBox*>("policy_h2o@2bit");
  ASSERT_TRUE(own);
  EXPECT_TRUE(own->isChecked());
  EXPECT_TRUE(own->isEnabled()) << "three panes: any one may go";
  EXPECT_EQ(own->text(), "H2O @2bit");
  QSignalSpy changed(&panel, &ControlPanel::runSettingsChanged);
  own->setChecked(false);
  EXPECT_EQ(panel.config().policies, (std::vector<std::string>{"full", "h2o"}));
  EXPECT_EQ(changed.count(), 1);
  // Two panes left: neither may go, but the untaken ones may come back, the own-precision one too.
  EXPECT_FALSE(panel.findChild<QCheckBox*>("policy_h2o")->isEnabled());
  EXPECT_TRUE(own->isEnabled());
  own->setChecked(true);
  EXPECT_EQ(panel.config().policies, (std::vector<std::string>{"full", "h2o", "h2o@2bit"}));
  // Four panes: nothing more may be ticked.
  panel.findChild<QCheckBox*>("policy_tova")->setChecked(true);
  EXPECT_EQ(panel.config().policies.size(), 4u);
  EXPECT_FALSE(panel.findChild<QCheckBox*>("policy_streaming")->isEnabled());
  // A list without such a pane: its box is gone.
  c.policies = {"full", "streaming"};
  panel.setConfig(c);
  QCoreApplication::processEvents(QEventLoop::AllEvents);
  QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
  EXPECT_FALSE(panel.findChild<QCheckBox*>("policy_h2o@2bit"));
}

TEST(ControlsTest, TheTokenizerFieldSaysTheDemosTokenizerOnlyWithTheDemosModel) {
  ControlPanel panel;
  StudioConfig d;
  d.model = "/assets/kjv-1M.bin";
  d.tokenizer = "/assets/kjv-tok2k.model";
  panel.setDefaultInputs(d);
  auto* model = panel.findChild<QLineEdit*>("model");
  auto* tokenizer = panel.findChild<QLineEdit*>("tokenizer");
  ASSERT_TRUE(model && tokenizer);
  EXPECT_EQ(tokenizer->placeholderText(), "default: kjv-tok2k.model");
  model->setText("/models/pythia-160m");  // a model given: an empty tokenizer field is its own
  EXPECT_EQ(tokenizer->placeholderText(), "the model's own");
  model->clear();
  EXPECT_EQ(tokenizer->placeholderText(), "default: kjv-tok2k.model");
}
