#include "studio_settings.h"

#include <algorithm>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>

#include "core/defaults.h"

namespace h2o::ui {

static QJsonObject builtin_defaults() {
  QFile f(":/h2o/default_settings.json");
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

StudioSettings load_settings(QSettings& settings) {
  const QJsonObject d = builtin_defaults();
  auto get = [&](const char* key) { return settings.value(key, d.value(key).toVariant()); };
  StudioSettings s;
  StudioConfig& c = s.config;
  c.model = get("model").toString().toStdString();
  c.tokenizer = get("tokenizer").toString().toStdString();
  c.prompts = get("prompts").toString().toStdString();
  c.forced = get("forced").toBool();
  c.forced_text = get("forced_text").toString().toStdString();
  c.backend = get("backend").toString().toStdString();
  if (c.backend.empty()) c.backend = "cpu";
  c.threads = get("threads").toInt();
  c.budget = get("budget").toInt();
  c.sinks = get("sinks").toInt();
  c.heavy = get("heavy").toInt();
  c.recent = get("recent").toInt();
  c.slack = get("slack").toInt();
  c.kv_limit_mib = std::max(0, get("kv_limit_mib").toInt());
  c.rolling = get("rolling").toBool();
  c.max_new_tokens = get("max_new_tokens").toInt();
  c.greedy = get("greedy").toBool();
  c.temperature = get("temperature").toFloat();
  c.seed = get("seed").toULongLong();
  c.capture_layer = get("layer").toInt();
  s.head = get("head").toInt();
  s.speed_limit = get("speed_limit").toDouble();
  if (c.budget < 2) c.budget = 64;
  if (c.max_new_tokens < 1) c.max_new_tokens = 128;
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
