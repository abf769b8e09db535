#include "ui/shell/control_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "core/backends/make_backend.h"
#include "core/flags/run_flags.h"
#include "core/runtime/backend.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

namespace {
QSpinBox* spin(const char* name, int lo, int hi, const QString& tip, const QString& special = {}) {
  auto* s = new QSpinBox;
  s->setObjectName(name);  // tests and style sheets find the fields by name
  s->setRange(lo, hi);
  s->setToolTip(tip);
  if (!special.isEmpty()) s->setSpecialValueText(special);
  s->setKeyboardTracking(false);
  return s;
}
// A field for a flag of the run's table (core/flags/run_flags.h), within its
// bounds; with `below`, one value under them stands for `special` ("auto").
QSpinBox* table_spin(const char* name, const char* flag, const QString& tip, const QString& special = {},
                     bool below = false) {
  const RunFlag& f = run_flag(flag);
  return spin(name, int(f.lo) - (below ? 1 : 0), int(f.hi), tip, special);
}
}  // namespace

// A line edit with a browse button; edits are taken when finished. With
// `folders`, the button's menu also offers a folder (a Hugging Face model
// folder: config.json, safetensors and tokenizer side by side).
static QWidget* with_browse(QLineEdit* edit, QWidget* owner, const QString& filter, bool folders = false) {
  auto* row = new QWidget;
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(2);
  auto* browse = new QToolButton;
  browse->setText("…");
  browse->setToolTip("Choose a file");
  h->addWidget(edit, 1);
  h->addWidget(browse);
  auto take = [edit](const QString& path) {
    if (path.isEmpty()) return;
    edit->setText(path);
    emit edit->editingFinished();
  };
  auto choose_file = [edit, owner, filter, take] {
    take(QFileDialog::getOpenFileName(owner, "Choose a file", edit->text(), filter));
  };
  if (folders) {
    auto* menu = new QMenu(browse);
    QObject::connect(menu->addAction("File…"), &QAction::triggered, owner, choose_file);
    QObject::connect(menu->addAction("Hugging Face folder…"), &QAction::triggered, owner, [edit, owner, take] {
      take(QFileDialog::getExistingDirectory(owner, "Choose a model folder", edit->text()));
    });
    browse->setMenu(menu);
    browse->setPopupMode(QToolButton::InstantPopup);
    browse->setToolTip("Choose a model file or a Hugging Face model folder");
  } else {
    QObject::connect(browse, &QToolButton::clicked, owner, choose_file);
  }
  return row;
}

ControlPanel::ControlPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  for (QGroupBox* box : {inputsBox(), backendBox(), cacheBox(), generationBox()}) layout->addWidget(box);
  layout->addStretch(1);
  connectChanges();
  fitSplit();
}

// Model, tokenizer, prompts, mode and the teacher-forced text.
QGroupBox* ControlPanel::inputsBox() {
  auto make_edit = [this](const char* name, const QString& tip) {
    auto* e = new QLineEdit;
    e->setObjectName(name);
    e->setToolTip(tip);
    e->setPlaceholderText("default");
    connect(e, &QLineEdit::editingFinished, this, [this] {
      if (!loading_) emit runSettingsChanged();
    });
    return e;
  };
  model_ = make_edit("model",
                     "Model: llama2.c .bin; .gguf (F32, F16, BF16, Q8_0, Q4_0/1, Q5_0/1, Q2_K-Q6_K and their _M mixes); "
                     "a Hugging Face folder, config.json or .safetensors; or synthetic:<shape>[:dtype=T]");
  tokenizer_ = make_edit("tokenizer",
                         "Tokenizer: SentencePiece .model, Hugging Face tokenizer.json, or a GGUF's vocabulary "
                         "(empty: the model's own, the one beside it, or bytes)");
  connect(model_, &QLineEdit::textChanged, this, &ControlPanel::sayTokenizerDefault);
  prompts_ = make_edit("prompts", "MT-Bench question.jsonl (empty: built-in prompts)");
  forced_text_ = make_edit("forced_text", "Text file scored in teacher-forced mode (empty: the assets' held-out text)");
  mode_ = new QComboBox;
  mode_->setObjectName("mode");
  mode_->addItems({"MT-Bench stream", "Teacher-forced text"});
  mode_->setToolTip("Stream: each policy answers the prompts itself. Teacher-forced: all are fed the text, scored by perplexity and agreement with the full cache");

  auto* inputs = new QGroupBox("Inputs");
  auto* fi = new QFormLayout(inputs);
  fi->addRow("Model", with_browse(model_, this, "Models (*.gguf *.bin *.safetensors *.json);;All files (*)", true));
  fi->addRow("Tokenizer",
             with_browse(tokenizer_, this, "Tokenizers (*.model *.json *.gguf);;All files (*)"));
  fi->addRow("Prompts", with_browse(prompts_, this, "JSON Lines (*.jsonl);;All files (*)"));
  fi->addRow("Mode", mode_);
  fi->addRow("Text", with_browse(forced_text_, this, "Text (*.txt);;All files (*)"));
  return inputs;
}

// Device, threads and the KV memory limit.
QGroupBox* ControlPanel::backendBox() {
  backend_ = new QComboBox;
  backend_->setObjectName("backend");
  for (const std::string& name : backend_names()) backend_->addItem(QString::fromStdString(name));
  backend_->setToolTip("Compute backend. CUDA needs a build with it and a GPU; otherwise the app says so and runs on "
                       "the CPU. cuda-sim runs the CUDA backend's code through an emulation on the CPU: slow, for checking");
  threads_ = table_spin("threads", "threads",
                  "CPU threads. Auto, the default: every core but one, which the window keeps for drawing "
                  "(h2o-cli takes them all)",
                  "auto");
  kv_limit_ = table_spin("kv_limit_mib", "kv-limit",
                   "KV memory of all sessions together, MiB, as a device's memory would cap it: the session "
                   "that needs more stops (the full cache, sooner or later), the others go on",
                   "none");
  kv_limit_->setSuffix(" MiB");
  auto* backend = new QGroupBox("Backend");
  auto* fb = new QFormLayout(backend);
  fb->addRow("Device", backend_);
  fb->addRow("Threads", threads_);
  fb->addRow("KV limit", kv_limit_);
  return backend;
}

// The policies shown, their budget and split, slack, KV precision and position rolling.
QGroupBox* ControlPanel::cacheBox() {
  // The bounds are the flags' (core/flags/run_flags.h), as h2o-studio's and h2o-cli's.
  budget_ = table_spin("budget", "budget", "Tokens per KV head for every policy that evicts");
  for (const StudioParam& p : studio_params()) {
    // A part's 0 stands for "auto" (its share of the budget).
    params_.emplace_back(p.name, table_spin(p.name.c_str(), p.name.c_str(), QString::fromStdString(p.description),
                                            p.automatic ? "auto" : ""));
  }
  slack_ = table_spin("slack", "slack",
                "Let the cache grow to budget + slack before cutting back (0: exact; auto: 0 on the CPU, " +
                    QString::number(kDeviceSlack) + " on the GPU, where each cut moves the cache on the device)",
                "auto", true);
  kv_bits_ = new QComboBox;
  kv_bits_->setObjectName("kv_bits");
  for (const auto& [label, bits] : {std::pair{"f32 (unquantized)", ""}, {"16 bits (f16)", "16"}, {"8 bits", "8"},
                                    {"4 bits", "4"}, {"2 bits (with H2O: MiniKV)", "2"}, {"keys 4, values 2", "4,2"}})
    kv_bits_->addItem(label, QString(bits));
  kv_bits_->setToolTip("KV precision of every pane (KIVI): keys per channel and values per token quantized in groups "
                       "of G; the sinks and the newest R..R+G-1 tokens stay f16 (G and R chosen for the model's head "
                       "and the budget unless --kv-group / --kv-residual give them; the pane's tooltip says which). "
                       "Fewer bits: less memory, more drift. A pane list may give one pane its own "
                       "(--policies full,h2o,h2o@2bit)");
  rolling_ = new QCheckBox("Position rolling");
  rolling_->setObjectName("rolling");
  rolling_->setToolTip("RoPE positions from cache slots instead of stream positions (StreamingLLM's fix)");
  // One box per kind in the registry: 2 to kMaxStudioPolicies of them, side by side in that order.
  auto* kinds = new QWidget;
  auto* kinds_layout = kinds_layout_ = new QGridLayout(kinds);
  kinds_layout->setContentsMargins(0, 0, 0, 0);
  for (const PolicyUnit* unit : policy_units()) {
    auto* box = new QCheckBox(QString::fromStdString(std::string(unit->short_title)));
    box->setObjectName(QString("policy_") + QString::fromStdString(std::string(unit->name)));
    box->setToolTip(QString::fromStdString(std::string(unit->title) + ": " + std::string(unit->description)));
    box->setProperty("policy", QString::fromStdString(std::string(unit->name)));
    kinds_layout->addWidget(box, int(policies_.size()) / 2, int(policies_.size()) % 2);
    policies_.push_back(box);
  }
  auto* cache = new QGroupBox("Cache policy");
  auto* fc = new QFormLayout(cache);
  fc->addRow("Policies", kinds);
  fc->addRow("Budget", budget_);
  for (size_t i = 0; i < params_.size(); ++i) fc->addRow(QString::fromStdString(studio_params()[i].label), params_[i].second);
  fc->addRow("Slack", slack_);
  fc->addRow("KV precision", kv_bits_);
  fc->addRow(rolling_);
  split_ = new QLabel;
  split_->setObjectName("budget_split");
  split_->setWordWrap(true);
  split_->setTextFormat(Qt::RichText);
  fc->addRow(split_);
  return cache;
}

// Tokens a turn, greedy or sampled, temperature and seed.
QGroupBox* ControlPanel::generationBox() {
  max_new_ = spin("max_new_tokens", 1, 1 << 16, "Tokens generated per turn");
  greedy_ = new QCheckBox("Greedy");
  greedy_->setObjectName("greedy");
  greedy_->setToolTip("Pick the most likely token (small models loop); else sample");
  temperature_ = new QDoubleSpinBox;
  temperature_->setObjectName("temperature");
  temperature_->setRange(0.05, 5);
  temperature_->setSingleStep(0.05);
  temperature_->setKeyboardTracking(false);
  temperature_->setToolTip("Sampling temperature (shared seed: all policies sample alike)");
  seed_ = spin("seed", 0, 2147483647, "Sampling seed, shared by all policies");
  auto* gen = new QGroupBox("Generation");
  auto* fg = new QFormLayout(gen);
  fg->addRow("Max new tokens", max_new_);
  fg->addRow(greedy_);
  fg->addRow("Temperature", temperature_);
  fg->addRow("Seed", seed_);
  return gen;
}

// Every field that changes the run says so (once, after loading settings); the budget's fields refit the split.
void ControlPanel::connectChanges() {
  auto changed = [this] {
    if (!loading_) emit runSettingsChanged();
  };
  for (QSpinBox* s : {threads_, kv_limit_, slack_, max_new_, seed_}) connect(s, &QSpinBox::valueChanged, this, changed);
  std::vector<QSpinBox*> split_fields = {budget_};
  for (const auto& [name, field] : params_) split_fields.push_back(field);
  for (QSpinBox* s : split_fields)
    connect(s, &QSpinBox::valueChanged, this, [this, changed] {
      if (loading_) return;
      fitSplit();
      changed();
    });
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, changed);
  for (QCheckBox* c : {rolling_, greedy_}) connect(c, &QCheckBox::toggled, this, changed);
  for (QCheckBox* c : policies_) connect(c, &QCheckBox::toggled, this, &ControlPanel::paneChosen);
  for (QComboBox* c : {mode_, backend_, kv_bits_}) connect(c, &QComboBox::currentIndexChanged, this, changed);
  connect(greedy_, &QCheckBox::toggled, temperature_, &QWidget::setDisabled);
}

void ControlPanel::fitSplit() {
  const bool was = loading_;
  loading_ = true;
  std::map<std::string, int> values;
  for (const auto& [name, field] : params_) values[name] = field->value();
  const BudgetSplit fit = fit_budget_split(budget_->value(), values);
  // The fields take any number typed (a maximum would turn a typed 50 into 5 on its first digit);
  // what does not fit the budget is set back at once and said in the split's line.
  for (const auto& [name, field] : params_) field->setValue(fit.params.at(name));
  loading_ = was;
  QStringList parts;
  try {
    for (const PolicyConfig& p : studio_policies(config()))
      if (p.evicts()) parts << QString::fromStdString(p.describe()).toHtmlEscaped();
  } catch (const std::exception& e) {
    parts << QString("<span style='color:%1'>%2</span>").arg(warning_color().name(), QString::fromUtf8(e.what()).toHtmlEscaped());
  }
  QString text = QString("<span style='color:%1'>%2</span>").arg(muted_text_color().name(), parts.join("<br>"));
  if (!fit.adjusted.empty())
    text = QString("<span style='color:%1'><b>%2</b></span><br>").arg(warning_color().name(),
                                                                      QString::fromStdString(fit.adjusted).toHtmlEscaped()) + text;
  split_->setText(text);
}

QString ControlPanel::splitText() const { return split_->text(); }

std::vector<QCheckBox*> ControlPanel::paneBoxes() const {
  std::vector<QCheckBox*> boxes = policies_;
  boxes.insert(boxes.end(), own_precision_boxes_.begin(), own_precision_boxes_.end());
  return boxes;
}

// Side by side means at least two panes, and no more than fit.
void ControlPanel::limitPolicyChoice() {
  const std::vector<QCheckBox*> boxes = paneBoxes();
  const int checked = int(std::count_if(boxes.begin(), boxes.end(), [](QCheckBox* b) { return b->isChecked(); }));
  for (QCheckBox* box : boxes)
    box->setEnabled(box->isChecked() ? checked > kMinStudioPolicies : checked < kMaxStudioPolicies);
}

void ControlPanel::paneChosen() {
  limitPolicyChoice();
  enableParams();
  if (loading_) return;
  fitSplit();
  emit runSettingsChanged();
}

void ControlPanel::setOwnPrecisionPanes(const std::vector<std::string>& policies) {
  for (QCheckBox* box : own_precision_boxes_) {
    kinds_layout_->removeWidget(box);
    box->hide();
    box->deleteLater();
  }
  own_precision_boxes_.clear();
  for (const std::string& name : policies) {
    if (name.find('@') == std::string::npos) continue;
    QString title = QString::fromStdString(name);
    try {
      title = short_policy_title(make_policy(parse_policy_entry(name, "policies"), {}));
    } catch (const std::exception&) {  // the split's line says what is wrong with it
    }
    auto* box = new QCheckBox(title);
    box->setObjectName(QString("policy_") + QString::fromStdString(name));
    box->setToolTip(QString("A pane with a KV precision of its own (%1): untick to take it out").arg(QString::fromStdString(name)));
    box->setProperty("policy", QString::fromStdString(name));
    box->setChecked(true);
    const int at = int(policies_.size() + own_precision_boxes_.size());
    kinds_layout_->addWidget(box, at / 2, at % 2);
    connect(box, &QCheckBox::toggled, this, &ControlPanel::paneChosen);
    own_precision_boxes_.push_back(box);
  }
}

void ControlPanel::enableParams() {
  std::vector<std::string> chosen;  // the panes' kinds, aliases and precisions resolved
  for (const std::string& pane : config().policies) {
    try {
      chosen.push_back(parse_policy_entry(pane, "policies").kind);
    } catch (const std::exception&) {  // the split's line says what is wrong with it
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& kinds = studio_params()[i].kind_names;
    const bool taken = std::any_of(chosen.begin(), chosen.end(), [&](const std::string& k) {
      return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
    });
    params_[i].second->setEnabled(taken);
  }
}

void ControlPanel::setDefaultInputs(const StudioConfig& d) {
  auto show = [](QLineEdit* edit, const std::string& path, const QString& none) {
    const QString name = QString::fromStdString(model_display_name(path));
    edit->setPlaceholderText(path.empty() ? none : "default: " + name);
    if (!path.empty()) edit->setToolTip(edit->toolTip().section("\n", 0, 0) + "\nEmpty: " + QString::fromStdString(path));
  };
  show(model_, d.model, "default");
  show(tokenizer_, d.tokenizer, "the model's own");
  show(prompts_, d.prompts, "built-in prompts");
  show(forced_text_, d.forced_text, "built-in prompts' text");
  default_tokenizer_placeholder_ = tokenizer_->placeholderText();
  sayTokenizerDefault();
}

// The demo's tokenizer goes with the demo's model only: with a model given, an empty field is its own.
void ControlPanel::sayTokenizerDefault() {
  tokenizer_->setPlaceholderText(model_->text().trimmed().isEmpty() ? default_tokenizer_placeholder_
                                                                     : QString("the model's own"));
}

void ControlPanel::setConfig(const StudioConfig& c) {
  loading_ = true;
  capture_layer_ = c.capture_layer;
  model_->setText(QString::fromStdString(c.model));
  tokenizer_->setText(QString::fromStdString(c.tokenizer));
  prompts_->setText(QString::fromStdString(c.prompts));
  forced_text_->setText(QString::fromStdString(c.forced_text));
  mode_->setCurrentIndex(c.forced ? 1 : 0);
  backend_->setCurrentText(QString::fromStdString(c.backend));
  threads_->setValue(c.threads);
  // Ranges first wide open: the stored values are fitted below, visibly.
  budget_->setValue(c.budget);
  for (const auto& [name, field] : params_) {
    const auto it = c.params.find(name);
    field->setValue(it != c.params.end() ? it->second : default_studio_params().at(name));
  }
  slack_->setValue(c.slack);
  kv_limit_->setValue(c.kv_limit_mib);
  rolling_->setChecked(c.rolling);
  max_new_->setValue(c.max_new_tokens);
  greedy_->setChecked(c.greedy);
  temperature_->setValue(c.temperature);
  temperature_->setDisabled(c.greedy);
  seed_->setValue(int(c.seed));
  int bits = kv_bits_->findData(QString::fromStdString(c.kv_bits));
  if (bits < 0) {  // K,V bits the menu does not list: shown as given
    kv_bits_->addItem(QString::fromStdString("bits " + c.kv_bits), QString::fromStdString(c.kv_bits));
    bits = kv_bits_->count() - 1;
  }
  kv_bits_->setCurrentIndex(bits);
  kv_group_ = c.kv_group;
  kv_residual_ = c.kv_residual;
  setOwnPrecisionPanes(c.policies);
  for (QCheckBox* box : policies_)
    box->setChecked(std::find(c.policies.begin(), c.policies.end(), box->property("policy").toString().toStdString()) !=
                    c.policies.end());
  limitPolicyChoice();
  enableParams();
  fitSplit();
  loading_ = false;
}

StudioConfig ControlPanel::config() const {
  StudioConfig c;
  c.model = model_->text().trimmed().toStdString();
  c.tokenizer = tokenizer_->text().trimmed().toStdString();
  c.prompts = prompts_->text().trimmed().toStdString();
  c.forced_text = forced_text_->text().trimmed().toStdString();
  c.forced = mode_->currentIndex() == 1;
  c.backend = backend_->currentText().toStdString();
  c.threads = threads_->value();
  c.budget = budget_->value();
  for (const auto& [name, field] : params_) c.params[name] = field->value();
  c.slack = slack_->value();
  c.kv_limit_mib = kv_limit_->value();
  c.rolling = rolling_->isChecked();
  c.max_new_tokens = max_new_->value();
  c.greedy = greedy_->isChecked();
  c.temperature = float(temperature_->value());
  c.seed = uint64_t(seed_->value());
  c.kv_bits = kv_bits_->currentData().toString().toStdString();
  c.kv_group = kv_group_;
  c.kv_residual = kv_residual_;
  c.policies.clear();
  for (QCheckBox* box : paneBoxes())
    if (box->isChecked()) c.policies.push_back(box->property("policy").toString().toStdString());
  c.capture_layer = capture_layer_;
  return c;
}

}  // namespace h2o::ui
