#include "studio_settings.h"

#include <algorithm>

#include <QSettings>
#include <QStringList>

#include "core/studio/assets.h"

namespace h2o::ui {

StudioSettings load_settings(QSettings& settings) {
  const StudioSettings d;  // what nobody changed
  const StudioConfig& dc = d.config;
  auto text = [&](const char* key, const std::string& fallback) {
    return settings.value(key, QString::fromStdString(fallback)).toString().toStdString();
  };
  auto number = [&](const char* key, auto fallback) { return settings.value(key, fallback).template value<decltype(fallback)>(); };
  StudioSettings s;
  StudioConfig& c = s.config;
  c.model = text("model", dc.model);
  c.tokenizer = text("tokenizer", dc.tokenizer);
  c.prompts = text("prompts", dc.prompts);
  c.forced = number("forced", dc.forced);
  c.forced_text = text("forced_text", dc.forced_text);
  c.backend = text("backend", dc.backend);
  if (c.backend.empty()) c.backend = dc.backend;
  c.threads = number("threads", dc.threads);
  const QStringList policies =
      settings.value("policies").toString().split(',', Qt::SkipEmptyParts);
  if (!policies.isEmpty()) {
    c.policies.clear();
    for (const QString& p : policies) c.policies.push_back(p.toStdString());
  }
  c.budget = number("budget", dc.budget);
  c.sinks = number("sinks", dc.sinks);
  c.heavy = number("heavy", dc.heavy);
  c.recent = number("recent", dc.recent);
  c.slack = number("slack", dc.slack);
  c.kv_limit_mib = std::max(0, number("kv_limit_mib", dc.kv_limit_mib));
  c.rolling = number("rolling", dc.rolling);
  c.max_new_tokens = number("max_new_tokens", dc.max_new_tokens);
  c.greedy = number("greedy", dc.greedy);
  c.temperature = number("temperature", dc.temperature);
  c.seed = number("seed", qulonglong(dc.seed));
  c.capture_layer = number("layer", dc.capture_layer);
  s.head = number("head", d.head);
  s.speed_limit = number("speed_limit", d.speed_limit);
  if (c.budget < 2) c.budget = dc.budget;
  if (c.max_new_tokens < 1) c.max_new_tokens = dc.max_new_tokens;
  return s;
}

void save_settings(QSettings& settings, const StudioSettings& s) {
  const StudioConfig& c = s.config;
  settings.setValue("model", QString::fromStdString(c.model));
  settings.setValue("tokenizer", QString::fromStdString(c.tokenizer));
  settings.setValue("prompts", QString::fromStdString(c.prompts));
  settings.setValue("forced", c.forced);
  settings.setValue("forced_text", QString::fromStdString(c.forced_text));
  settings.setValue("backend", QString::fromStdString(c.backend));
  settings.setValue("threads", c.threads);
  QStringList policies;
  for (const std::string& p : c.policies) policies << QString::fromStdString(p);
  settings.setValue("policies", policies.join(','));
  settings.setValue("budget", c.budget);
  settings.setValue("sinks", c.sinks);
  settings.setValue("heavy", c.heavy);
  settings.setValue("recent", c.recent);
  settings.setValue("slack", c.slack);
  settings.setValue("kv_limit_mib", c.kv_limit_mib);
  settings.setValue("rolling", c.rolling);
  settings.setValue("max_new_tokens", c.max_new_tokens);
  settings.setValue("greedy", c.greedy);
  settings.setValue("temperature", double(c.temperature));
  settings.setValue("seed", quint64(c.seed));
  settings.setValue("layer", c.capture_layer);
  settings.setValue("head", s.head);
  settings.setValue("speed_limit", s.speed_limit);
}

void fill_default_inputs(StudioConfig& c, const QString& argv0) {
  if (!c.model.empty()) return;
  const DefaultInputs d = default_inputs(find_assets_dir(argv0.toStdString()));
  c.model = d.model;
  if (c.tokenizer.empty()) c.tokenizer = d.tokenizer;
  if (c.prompts.empty()) c.prompts = d.prompts;
}

}  // namespace h2o::ui
