#include "ui/shell/banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/plot/theme.h"

namespace h2o::ui {

Banner::Banner(QWidget* parent) : QWidget(parent), layout_(new QVBoxLayout(this)) {
  layout_->setContentsMargins(0, 0, 0, 0);
  layout_->setSpacing(1);
  setObjectName("banner");
  hide();
}

QString Banner::text(const QString& key) const {
  const auto it = lines_.find(key);
  return it == lines_.end() ? QString() : (*it)->findChild<QLabel*>()->text();
}

void Banner::set(const QString& key, const QString& text) {
  if (QWidget* old = lines_.take(key)) old->deleteLater();
  if (!text.isEmpty()) {
    auto* line = new QWidget;
    line->setObjectName("banner_" + key);
    line->setAutoFillBackground(true);
    auto* h = new QHBoxLayout(line);
    h->setContentsMargins(8, 3, 4, 3);
    auto* label = new QLabel(text);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* close = new QToolButton;
    close->setText("×");
    close->setAutoRaise(true);
    close->setToolTip("Hide this message");
    connect(close, &QToolButton::clicked, this, [this, key] { clear(key); });
    h->addWidget(label, 1);
    h->addWidget(close);
    layout_->addWidget(line);
    lines_.insert(key, line);
  }
  restyle();
  setVisible(!lines_.isEmpty());
  emit changed();
}

void Banner::restyle() {
  const QColor w = warning_color();
  const QColor back = current_theme() == ThemeKind::Dark ? QColor(w.red() / 4, w.green() / 4, w.blue() / 5) : w.lighter(190);
  for (QWidget* line : lines_) {
    line->setStyleSheet(QString("QWidget#%1 { background: %2; border-left: 4px solid %3; }"
                                "QLabel { color: %4; font-weight: bold; }")
                            .arg(line->objectName(), back.name(), w.name(), text_color().name()));
  }
}

}  // namespace h2o::ui
