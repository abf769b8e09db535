#include "ui/shell/studio_settings.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <QSettings>
#include <QStringList>

#include "core/flags/run_flags.h"
#include "core/studio/assets.h"
#include "ui/views/token_flow_view.h"

namespace h2o::ui {
namespace {

// Every remembered setting with its key: the run's (core/studio's one list,
// which its JSON walks too), then the window's own.
template <class Settings, class Visit>
void for_each_setting(Settings& s, Visit&& visit) {
  for_each_studio_field(s.config, visit);
  visit("head", s.head);
  visit("speed_limit", s.speed_limit);
  visit("theme", s.theme);
  visit("ui_scale", s.ui_scale);
  visit("text_scale", s.text_scale);
  visit("presentation_text_scale", s.presentation_text_scale);
}

// QSettings values of each setting's type (lists as comma-separated text).
QVariant to_variant(const std::string& v) { return QString::fromStdString(v); }
QVariant to_variant(const std::vector<std::string>& v) {
  QStringList list;
  for (const std::string& s : v) list << QString::fromStdString(s);
  return list.join(',');
}
QVariant to_variant(uint64_t v) { return quint64(v); }
template <class T>
QVariant to_variant(T v) {
  return QVariant::fromValue(v);
}

void from_variant(const QVariant& q, std::string& v) { v = q.toString().toStdString(); }
void from_variant(const QVariant& q, std::vector<std::string>& v) {
  v.clear();
  for (const QString& s : q.toString().split(',', Qt::SkipEmptyParts)) v.push_back(s.toStdString());
}
void from_variant(const QVariant& q, uint64_t& v) { v = q.toULongLong(); }
template <class T>
void from_variant(const QVariant& q, T& v) {
  v = q.value<T>();
}

// `to`'s field named `key` set to `value` (a field of another config of the same shape).
template <class Value>
void set_field(StudioConfig& to, const char* key, const Value& value) {
  for_each_studio_field(to, [&](const char* k, auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, Value>)
      if (std::strcmp(k, key) == 0) field = value;
  });
}

// Each remembered run setting taken over the defaults in turn, kept only where the run's own
// checks (studio_engine_options: the flags' rules) still pass with it; a refused one stays at
// its default and is named in `refused`, with the file, so the user can find and fix it.
StudioConfig drop_refused(const StudioConfig& remembered, const StudioConfig& defaults, const QString& file,
                          std::vector<std::string>& refused) {
  StudioConfig good = defaults;
  for_each_studio_field(remembered, [&](const char* key, const auto& value) {
    StudioConfig trial = good;
    set_field(trial, key, value);
    try {
      studio_engine_options(trial);
      good = std::move(trial);
    } catch (const std::exception& e) {
      refused.push_back(file.toStdString() + ": the remembered " + key + " '" + to_variant(value).toString().toStdString() +
                        "' is refused (" + e.what() + "); the default is used");
    }
  });
  return good;
}

}  // namespace

StudioSettings load_settings(QSettings& settings) {
  StudioSettings s;  // starts as the defaults: what nobody changed stays so
  for_each_setting(s, [&](const char* key, auto& field) {
    if (settings.contains(key)) from_variant(settings.value(key), field);
  });
  const StudioSettings d;
  StudioConfig& c = s.config;
  if (c.backend.empty()) c.backend = d.config.backend;
  if (c.policies.empty()) c.policies = d.config.policies;
  keep_in_bounds(c, d.config);  // the flags' bounds (core/flags/run_flags.h)
  if (c.max_new_tokens < 1) c.max_new_tokens = d.config.max_new_tokens;
  // Before G and R were shaped for the model (0: not given), every run saved the fixed 32 and 64:
  // read back, those would hold as given values and keep a small budget's quantized pane all f16.
  if (c.kv_group == 32 && c.kv_residual == 64) c.kv_group = c.kv_residual = 0;
  c = drop_refused(c, d.config, settings.fileName(), s.refused);
  if (s.theme != "light") s.theme = "dark";
  s.ui_scale = std::clamp(s.ui_scale, 0.75, 3.0);
  s.text_scale = std::clamp(s.text_scale, TokenFlowView::kLeastTextScale, TokenFlowView::kMostTextScale);
  if (s.presentation_text_scale != 0)
    s.presentation_text_scale =
        std::clamp(s.presentation_text_scale, TokenFlowView::kLeastTextScale, TokenFlowView::kMostTextScale);
  return s;
}

void save_settings(QSettings& settings, const StudioSettings& s) {
  for_each_setting(s, [&](const char* key, const auto& field) { settings.setValue(key, to_variant(field)); });
}

void fill_default_inputs(StudioConfig& c, const QString& argv0) {
  const DefaultInputs d = default_inputs(find_assets_dir(argv0.toStdString()));
  if (c.forced_text.empty()) c.forced_text = d.forced_text;
  if (!c.model.empty()) {
    if (c.tokenizer.empty()) c.tokenizer = demo_tokenizer_for(d, c.model);  // the demo's model, chosen by its file
    return;
  }
  c.model = d.model;
  if (c.tokenizer.empty()) c.tokenizer = d.tokenizer;
  if (c.prompts.empty()) c.prompts = d.prompts;
}

std::vector<RecentModel> load_recent_models(QSettings& settings) {
  std::vector<RecentModel> recent;
  for (const QString& line : settings.value("recent_models").toStringList()) {
    const QStringList parts = line.split('\t');
    if (!parts.value(0).isEmpty()) recent.push_back({parts.value(0).toStdString(), parts.value(1).toStdString()});
  }
  return recent;
}

void save_recent_models(QSettings& settings, const std::vector<RecentModel>& recent) {
  QStringList lines;
  for (const RecentModel& r : recent) lines << QString::fromStdString(r.model) + '\t' + QString::fromStdString(r.tokenizer);
  settings.setValue("recent_models", lines);
}

}  // namespace h2o::ui
