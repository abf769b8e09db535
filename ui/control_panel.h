#pragma once
// The controls dock: inputs, backend, cache policy, generation and view.
// It only holds values: changes are reported as a whole StudioSettings (run
// settings, applied by restarting the run) or as a view change (instant).
#include <QWidget>
#include <vector>

#include "ui/studio_settings.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace h2o::ui {

class ControlPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ControlPanel(QWidget* parent = nullptr);
  void setSettings(const StudioSettings& s);
  StudioSettings settings() const;
  // The model's shape, for the layer and head choices.
  void setShape(int layers, int heads);
  // What empty input fields stand for (the demo's default files), shown as placeholders.
  void setDefaultInputs(const StudioConfig& defaults);
  int layer() const;
  int head() const;

 signals:
  void runSettingsChanged();  // restart needed (debounced by the caller)
  void viewChanged();
  void speedChanged(double steps_per_second);

 private:
  QLineEdit *model_, *tokenizer_, *prompts_, *forced_text_;
  QComboBox *mode_, *backend_, *layer_, *head_;
  QSpinBox *threads_, *kv_limit_, *budget_, *sinks_, *heavy_, *recent_, *slack_, *max_new_, *seed_;
  QCheckBox *rolling_, *greedy_;
  std::vector<QCheckBox*> policies_;  // one per registered kind, in registry order
  QDoubleSpinBox *temperature_, *speed_;
  bool loading_ = false;  // setSettings() in progress: no change signals
  void limitPolicyChoice();
};

}  // namespace h2o::ui
