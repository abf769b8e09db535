#pragma once
// The controls dock: inputs, backend, cache policy and generation. It only
// holds values: a change is reported as runSettingsChanged (the window asks
// before restarting the run). The policy parameters' fields come from the
// policy units (h2o::studio_params: their names, least values and help), each
// enabled while a chosen policy takes it. The budget fields can only hold a
// split every policy takes: they are fitted as they change
// (h2o::fit_budget_split), and a line under them says what was adjusted and
// what each policy keeps. (What is shown — layer, head, speed — sits in the
// always-visible transport bar.)
#include <QWidget>
#include <string>
#include <utility>
#include <vector>

#include "ui/shell/studio_settings.h"

class QCheckBox;
class QGridLayout;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace h2o::ui {

class ControlPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ControlPanel(QWidget* parent = nullptr);
  // The run settings (capture_layer is not the panel's: it is left as given).
  void setConfig(const StudioConfig& c);
  StudioConfig config() const;
  // What empty input fields stand for (the demo's default files), shown as placeholders.
  void setDefaultInputs(const StudioConfig& defaults);
  // The line under the budget fields: what was adjusted, what each policy keeps.
  QString splitText() const;

 signals:
  void runSettingsChanged();  // restart needed (debounced by the caller)

 private:
  QGroupBox* inputsBox();
  QGroupBox* backendBox();
  QGroupBox* cacheBox();
  QGroupBox* generationBox();
  void connectChanges();
  QLineEdit *model_, *tokenizer_, *prompts_, *forced_text_;
  QComboBox *mode_, *backend_, *kv_bits_;
  QSpinBox *threads_, *kv_limit_, *budget_, *slack_, *max_new_, *seed_;
  std::vector<std::pair<std::string, QSpinBox*>> params_;  // one per h2o::studio_params() entry, in its order
  QCheckBox *rolling_, *greedy_;
  std::vector<QCheckBox*> policies_;  // one per registered kind, in registry order
  QDoubleSpinBox* temperature_;
  QLabel* split_;
  int capture_layer_ = 0;
  // Kept as the settings gave them: KV group and residual (flags only).
  int kv_group_ = 0, kv_residual_ = 0;  // 0: not given (shaped for the model)
  // Panes with a precision of their own ("h2o@2bit", from a flag or a replay): a box each after the
  // kinds', made by setConfig, so that such a pane can be taken out (and put back) like any other.
  QGridLayout* kinds_layout_ = nullptr;
  std::vector<QCheckBox*> own_precision_boxes_;
  void setOwnPrecisionPanes(const std::vector<std::string>& policies);
  // Every pane box: the kinds' then the own-precision panes'.
  std::vector<QCheckBox*> paneBoxes() const;
  bool loading_ = false;  // setConfig() in progress: no change signals
  void limitPolicyChoice();
  void paneChosen();  // a pane box ticked or unticked
  void sayTokenizerDefault();  // the tokenizer field's placeholder for the model field's text
  QString default_tokenizer_placeholder_ = "the model's own";
  // A parameter's field is enabled while a chosen policy takes it.
  void enableParams();
  // Fits the budget fields to a valid split (visibly) and says what each policy keeps.
  void fitSplit();
};

}  // namespace h2o::ui
