#include "ui/plot/theme.h"


#include <QApplication>
#include <QFont>
#include <QIcon>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>
#include <QStringList>
#include <QStyleFactory>
#include <algorithm>
#include <qcustomplot.h>

static void init_h2o_resources() { Q_INIT_RESOURCE(h2o_studio); }

namespace h2o::ui {

namespace {
ThemeKind g_theme = ThemeKind::Dark;
double g_scale = 1.0;
bool dark() { return g_theme == ThemeKind::Dark; }
QString text(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }
}  // namespace

ThemeKind theme_from_name(const QString& name, bool* ok) {
  const QString n = name.trimmed().toLower();
  if (ok) *ok = n == "dark" || n == "light";
  return n == "light" ? ThemeKind::Light : ThemeKind::Dark;
}
QString theme_name(ThemeKind kind) { return kind == ThemeKind::Light ? "light" : "dark"; }

QColor policy_color(const PolicyConfig& policy) {
  QColor c(text(policy.unit().color));
  // A policy at a reduced KV precision beside the same policy unquantized: the
  // same hue, paler the fewer bits it keeps (16, 8, 4, 2: one to four steps),
  // so its curves and header stay apart from the others'.
  if (!policy.kv.native()) {
    const int bits = std::min(policy.kv.key_bits, policy.kv.value_bits);
    const int steps = bits >= 16 ? 1 : bits >= 8 ? 2 : bits >= 4 ? 3 : 4;
    c = QColor::fromHsv(c.hsvHue(), c.hsvSaturation() * (100 - 18 * steps) / 100, std::min(255, c.value() + 15 * steps));
  }
  // The units' colours are chosen for the dark background; a shade darker reads on white.
  return dark() ? c : c.darker(135);
}
// A policy at a KV precision of its own reads "H2O @2bit", so two panes of one kind stay apart.
static QString precision_suffix(const PolicyConfig& policy) {
  return policy.kv.native() ? QString() : " @" + QString::fromStdString(policy.kv.label());
}
QString policy_title(const PolicyConfig& policy) { return text(policy.unit().title) + precision_suffix(policy); }
QString short_policy_title(const PolicyConfig& policy) {
  return text(policy.unit().short_title) + precision_suffix(policy);
}

// The names every kind that keeps tokens by score gives them, each with the
// kind it belongs to, "heavy hitter (H2O) / attended now (TOVA)": a TOVA pane
// is all "attended now" between its sinks, and says so in its own words.
static QString scored_roles() {
  QStringList roles;
  for (const PolicyUnit* unit : policy_units())
    if (PolicyConfig::named(unit->name).rule().by_score > 0)
      roles << text(unit->scored_role) + " (" + text(unit->short_title) + ")";
  return roles.join(" / ");
}

QString fate_legend_name(Fate fate) {
  if (fate == Fate::Unborn) return "new";
  return fate == Fate::Heavy ? scored_roles() : QString(fate_name(fate));
}

QColor fate_color(Fate fate) {
  switch (fate) {
    case Fate::Unborn: return dark() ? QColor("#ffffff") : QColor("#101418");
    case Fate::Evicted: return dark() ? QColor("#5f6b73") : QColor("#9aa4ab");
    case Fate::Cached: return dark() ? QColor("#c9d1d6") : QColor("#3c4850");
    case Fate::Heavy: return dark() ? QColor("#ffc940") : QColor("#c27c00");
    case Fate::Recent: return dark() ? QColor("#63c9f2") : QColor("#1479b8");
    case Fate::Sink: return dark() ? QColor("#e57ae5") : QColor("#a2249f");
  }
  return Qt::gray;
}

QColor raster_color(Fate fate) {
  if (fate == Fate::Unborn) return background_color();
  if (fate == Fate::Evicted) return dark() ? QColor("#323b41") : QColor("#e2e6e9");
  if (fate == Fate::Cached && !dark()) return QColor("#5e6b73");  // well apart from evicted and the page
  return fate_color(fate);
}

QString fate_tooltip(Fate fate, const PolicyConfig* policy) {
  switch (fate) {
    case Fate::Unborn: return "just generated, not yet in any cache";
    case Fate::Evicted: return "evicted: no longer in the cache of the shown layer/head";
    case Fate::Cached: return "cached, in no special role (the full cache keeps everything)";
    case Fate::Heavy:
      if (!policy) return scored_roles() + ": kept for its attention score";
      return text(policy->unit().scored_role) + ": kept for its attention score (" + policy_title(*policy) + ": " +
             text(policy->unit().description) + ")";
    case Fate::Recent: return "recent: inside the policy's window of latest tokens";
    case Fate::Sink: return "attention sink: one of the first tokens, always kept";
  }
  return {};
}

ThemeKind current_theme() { return g_theme; }
double ui_scale() { return g_scale; }
double scaled_pt(double pt) { return pt * g_scale; }
QColor background_color() { return dark() ? QColor("#1b2024") : QColor("#ffffff"); }
QColor text_color() { return dark() ? QColor("#dfe5e8") : QColor("#1a1f23"); }
QColor muted_text_color() { return dark() ? QColor("#8fa3ae") : QColor("#55636c"); }
QColor grid_color() { return dark() ? QColor("#2e363c") : QColor("#e3e7ea"); }
QColor axis_color() { return dark() ? QColor("#6c787f") : QColor("#6f7a81"); }
QColor warning_color() { return dark() ? QColor("#e0a040") : QColor("#a65f00"); }
QColor marker_color() { return dark() ? QColor("#ff7b72") : QColor("#c62828"); }

QCPColorGradient attention_gradient() {
  // Dark (or white) for no attention, through purple and orange: small
  // probabilities still show, sinks do not wash out the rest.
  QCPColorGradient g;
  if (dark()) {
    g.setColorStopAt(0.0, QColor("#11161a"));
    g.setColorStopAt(0.05, QColor("#2b1d4f"));
    g.setColorStopAt(0.2, QColor("#7a2d82"));
    g.setColorStopAt(0.45, QColor("#d24f4f"));
    g.setColorStopAt(0.7, QColor("#f59c3a"));
    g.setColorStopAt(1.0, QColor("#fcf4b0"));
    g.setNanColor(QColor("#262d32"));
  } else {
    // Not white at zero: the attended triangle stays apart from the page and
    // from the keys a cache no longer holds (NaN, grey); low values a clear yellow.
    g.setColorStopAt(0.0, QColor("#f1e8cc"));
    g.setColorStopAt(0.05, QColor("#f0cf6a"));
    g.setColorStopAt(0.2, QColor("#f2a65a"));
    g.setColorStopAt(0.45, QColor("#d9483b"));
    g.setColorStopAt(0.7, QColor("#8e2b7a"));
    g.setColorStopAt(1.0, QColor("#2d1b4e"));
    g.setNanColor(QColor("#c9d0d5"));
  }
  g.setNanHandling(QCPColorGradient::nhNanColor);
  return g;
}

QColor legible_on(const QColor& color, const QColor& ground) {
  const auto luminance = [](const QColor& c) { return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF(); };
  if (std::abs(luminance(color) - luminance(ground)) >= 0.3) return color;
  const QColor ink = text_color();
  return QColor::fromRgbF((color.redF() + ink.redF()) / 2, (color.greenF() + ink.greenF()) / 2, (color.blueF() + ink.blueF()) / 2);
}

namespace {

// The transport's icons (play, pause, step, back, reset, live) in an s x s square, margin m, ink c.
void draw_transport_icon(QPainter& p, IconKind kind, double s, double m, const QColor& c) {
  const auto triangle = [&](double x0, double x1) {
    QPainterPath path;
    path.moveTo(x0, m);
    path.lineTo(x1, s / 2);
    path.lineTo(x0, s - m);
    path.closeSubpath();
    p.drawPath(path);
  };
  switch (kind) {
    case IconKind::Play: triangle(s * 0.28, s * 0.8); break;
    case IconKind::Pause:
      p.setPen(Qt::NoPen);
      p.drawRect(QRectF(s * 0.25, m, s * 0.17, s - 2 * m));
      p.drawRect(QRectF(s * 0.58, m, s * 0.17, s - 2 * m));
      break;
    case IconKind::StepForward:
      triangle(s * 0.2, s * 0.65);
      p.setPen(Qt::NoPen);
      p.drawRect(QRectF(s * 0.68, m, s * 0.12, s - 2 * m));
      break;
    case IconKind::StepBack: {
      QPainterPath path;
      path.moveTo(s * 0.8, m);
      path.lineTo(s * 0.35, s / 2);
      path.lineTo(s * 0.8, s - m);
      path.closeSubpath();
      p.drawPath(path);
      p.setPen(Qt::NoPen);
      p.drawRect(QRectF(s * 0.2, m, s * 0.12, s - 2 * m));
      break;
    }
    case IconKind::Reset: {
      p.setBrush(Qt::NoBrush);
      const QRectF r(m, m, s - 2 * m, s - 2 * m);
      p.drawArc(r, 60 * 16, 280 * 16);
      p.setBrush(c);
      QPainterPath head;
      head.moveTo(s * 0.62, m * 0.4);
      head.lineTo(s * 0.86, s * 0.2);
      head.lineTo(s * 0.6, s * 0.4);
      head.closeSubpath();
      p.drawPath(head);
      break;
    }
    case IconKind::Live:
      triangle(s * 0.12, s * 0.52);
      triangle(s * 0.48, s * 0.88);
      break;
    default: break;
  }
}

// The window's icons (open, save, report, full screen), outlined in the ink `c`.
void draw_window_icon(QPainter& p, IconKind kind, double s, double m, const QColor& c) {
  switch (kind) {
    case IconKind::Open: {
      p.setBrush(Qt::NoBrush);
      QPainterPath path;
      path.moveTo(m, s * 0.3);
      path.lineTo(s * 0.42, s * 0.3);
      path.lineTo(s * 0.5, s * 0.4);
      path.lineTo(s - m, s * 0.4);
      path.lineTo(s - m, s - m);
      path.lineTo(m, s - m);
      path.closeSubpath();
      p.drawPath(path);
      break;
    }
    case IconKind::Save:
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRectF(m, m, s - 2 * m, s - 2 * m));
      p.setBrush(c);
      p.drawRect(QRectF(s * 0.32, m, s * 0.36, s * 0.22));
      break;
    case IconKind::Report:
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRectF(s * 0.22, m, s * 0.56, s - 2 * m));
      for (double y : {0.38, 0.52, 0.66}) p.drawLine(QPointF(s * 0.32, s * y), QPointF(s * 0.68, s * y));
      break;
    case IconKind::Fullscreen:
      p.setBrush(Qt::NoBrush);
      for (const auto& [x, y, dx, dy] : {std::tuple{m, m, 1, 1}, {s - m, m, -1, 1}, {m, s - m, 1, -1}, {s - m, s - m, -1, -1}}) {
        p.drawLine(QPointF(x, y), QPointF(x + dx * s * 0.22, y));
        p.drawLine(QPointF(x, y), QPointF(x, y + dy * s * 0.22));
      }
      break;
    default: break;
  }
}

}  // namespace

QIcon theme_icon(IconKind kind) {
  QIcon icon;
  for (int size : {16, 24, 32, 48}) {
    QPixmap pm(size, size);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    const QColor c = text_color();
    p.setPen(QPen(c, std::max(1.5, size / 10.0), Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    p.setBrush(c);
    const double s = size, m = s * 0.18;
    draw_transport_icon(p, kind, s, m, c);
    draw_window_icon(p, kind, s, m, c);
    p.end();
    icon.addPixmap(pm);
  }
  return icon;
}

void apply_theme(QApplication& app, ThemeKind kind, double scale) {
  static bool resources = false;
  if (!resources) {
    init_h2o_resources();
    resources = true;
  }
  g_theme = kind;
  g_scale = std::clamp(scale, 0.75, 3.0);
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
  const QColor txt = text_color();
  if (dark()) {
    const QColor window("#23292e"), base("#1b2024"), button("#2c3338");
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor("#30383e"));
    p.setColor(QPalette::Button, button);
    p.setColor(QPalette::Highlight, QColor("#3d7eaa"));
    p.setColor(QPalette::PlaceholderText, QColor("#7d878d"));
    p.setColor(QPalette::Mid, QColor("#3a4348"));
  } else {
    p.setColor(QPalette::Window, QColor("#f3f5f6"));
    p.setColor(QPalette::Base, QColor("#ffffff"));
    p.setColor(QPalette::AlternateBase, QColor("#eef1f3"));
    p.setColor(QPalette::ToolTipBase, QColor("#ffffff"));
    p.setColor(QPalette::Button, QColor("#e6eaed"));
    p.setColor(QPalette::Highlight, QColor("#2f6f9f"));
    p.setColor(QPalette::PlaceholderText, QColor("#7d878d"));
    p.setColor(QPalette::Mid, QColor("#c4ccd1"));
  }
  p.setColor(QPalette::WindowText, txt);
  p.setColor(QPalette::ToolTipText, txt);
  p.setColor(QPalette::Text, txt);
  p.setColor(QPalette::ButtonText, txt);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::HighlightedText, Qt::white);
  const QColor disabled = dark() ? QColor("#6c757a") : QColor("#9aa4ab");
  p.setColor(QPalette::Disabled, QPalette::Text, disabled);
  p.setColor(QPalette::Disabled, QPalette::ButtonText, disabled);
  p.setColor(QPalette::Disabled, QPalette::WindowText, disabled);
  app.setPalette(p);
  QFont font = QApplication::font();
  static const double base_pt = font.pointSizeF() > 0 ? font.pointSizeF() : 9.0;
  font.setPointSizeF(base_pt * g_scale);
  QApplication::setFont(font);
  app.setWindowIcon(QIcon(":/h2o/icons/h2o-studio.svg"));
  const QString border = dark() ? "#3a4348" : "#c4ccd1", tip = dark() ? "#30383e" : "#ffffff";
  app.setStyleSheet(QString("QToolTip { color: %1; background: %2; border: 1px solid %3; }"
                            "QGroupBox { border: 1px solid %3; border-radius: 4px; margin-top: 14px; padding-top: 4px; }"
                            "QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 3px; color: %4; }"
                            "QSplitter::handle { background: %5; }"
                            "QTabWidget::pane { border: 1px solid %3; }")
                        .arg(txt.name(), tip, border, muted_text_color().name(), dark() ? "#2a3136" : "#d5dbdf"));
}

void style_plot(QCustomPlot* plot) {
  plot->setBackground(background_color());
  plot->setNoAntialiasingOnDrag(true);
  QFont font = plot->font();
  font.setPointSizeF(scaled_pt(8));
  const double line = std::max(1.0, g_scale);
  for (QCPAxis* axis : plot->axisRect()->axes()) {
    axis->setBasePen(QPen(axis_color(), line));
    axis->setTickPen(QPen(axis_color(), line));
    axis->setSubTickPen(QPen(axis_color().darker(dark() ? 140 : 80), line));
    axis->setTickLabelColor(text_color());
    axis->setLabelColor(text_color());
    axis->setTickLabelFont(font);
    axis->setLabelFont(font);
    axis->grid()->setPen(QPen(grid_color(), 1, Qt::DotLine));
    axis->grid()->setSubGridVisible(false);
  }
  plot->legend->setBrush(dark() ? QColor(30, 36, 40, 210) : QColor(255, 255, 255, 220));
  plot->legend->setBorderPen(QPen(axis_color()));
  plot->legend->setTextColor(text_color());
  plot->legend->setFont(font);
  // Titles (make_plot's, the panes' plots') follow the theme too.
  for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
    if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i))) {
      title->setTextColor(text_color());
      QFont f = title->font();
      f.setPointSizeF(scaled_pt(title->property("h2o_pt").isValid() ? title->property("h2o_pt").toDouble() : 9));
      title->setFont(f);
    }
  for (int i = 0; i < plot->graphCount(); ++i) {
    QPen pen = plot->graph(i)->pen();
    if (plot->graph(i)->property("h2o_width").isValid()) pen.setWidthF(plot->graph(i)->property("h2o_width").toDouble() * line);
    plot->graph(i)->setPen(pen);
  }
}

}  // namespace h2o::ui
