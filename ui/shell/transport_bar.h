#pragma once
// The timeline and what is shown, always in view (never in the scrolling
// dock): step back / play / step forward / live (the window's actions), a
// slider over every step of the run or the replay, the step shown, the layer
// and head, the speed (a live run: steps per second; a replay: times the
// recorded pace), a box to type a prompt into the live stream, and one to plant a needle in it.
// Where one row is too narrow for them all (a window under ~1,150 px), the two boxes take a second
// row, so the window can be made as narrow as the rest needs.
#include <QWidget>

class QAction;
class QComboBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QSlider;
class QVBoxLayout;

namespace h2o::ui {

class TransportBar : public QWidget {
  Q_OBJECT
 public:
  // `extra`: more of the window's actions shown as icons at the end (reset, report, presentation).
  TransportBar(QAction* back, QAction* play, QAction* step, QAction* live, const QList<QAction*>& extra = {},
               QWidget* parent = nullptr);
  // Steps that can be shown: [first, last]; `total` > last when a replay has more to read.
  void setRange(qint64 first, qint64 last, qint64 total);
  void setStep(qint64 step, bool following);
  void setShape(int layers, int heads);
  void setView(int layer, int head);  // without emitting
  int layer() const;
  int head() const;  // -1: mean over heads
  void setReplay(bool replay);
  bool replay() const { return replay_; }
  void setSpeed(double value);  // without emitting
  double speed() const;
  void setPromptEnabled(bool enabled, const QString& why);
  QSlider* slider() const { return slider_; }
  QLineEdit* prompt() const { return prompt_; }
  QLineEdit* needle() const { return needle_; }
  QLabel* stepLabel() const { return step_label_; }
  bool boxesOnSecondRow() const;
  QSize minimumSizeHint() const override;  // the boxes on a second row

 signals:
  void seekRequested(qint64 step);
  void viewChanged(int layer, int head);
  void speedChanged(double value);
  void promptSubmitted(const QString& text);
  void needleSubmitted(const QString& text);  // a sentence to plant (docs/STUDIO.md, "The needle")

 private:
  // The bar's parts, left to right: the timeline and its step label; layer, head, speed and prompt; their signals.
  void addTimeline(QHBoxLayout* h);
  void addViewControls(QHBoxLayout* h);
  void connectControls();
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;
  void fitBoxes();  // the prompt and needle boxes in the first row where it has room, else the second
  QVBoxLayout* rows_;
  QHBoxLayout *first_row_, *second_row_;
  QWidget* boxes_;  // the prompt and needle boxes
  int extras_ = 0;  // icons after the boxes in the first row
  QSlider* slider_;
  QLabel* step_label_;
  QComboBox *layer_, *head_;
  QDoubleSpinBox* speed_;
  QLineEdit *prompt_, *needle_;
  qint64 total_ = 0;
  bool replay_ = false, updating_ = false;
};

}  // namespace h2o::ui
