#include "pane_area.h"

#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/policy_pane.h"
#include "ui/theme.h"

namespace h2o::ui {

PaneArea::PaneArea(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
}

int PaneArea::minimumPaneWidth() { return int(300 * ui_scale()); }

void PaneArea::setPanes(std::vector<PolicyPane*> panes) {
  for (PolicyPane* p : panes_) p->deleteLater();
  panes_ = std::move(panes);
  arranged_ = false;
  arrange(pick());
}

PaneArea::Mode PaneArea::pick() const {
  const int n = int(panes_.size());
  if (n <= 1) return Mode::Columns;
  int min_h = 0;
  for (PolicyPane* p : panes_) min_h = std::max(min_h, p->minimumSizeHint().height());
  if (width() / n >= minimumPaneWidth()) return Mode::Columns;
  if (n == 4 && width() / 2 >= minimumPaneWidth() && height() / 2 >= min_h) return Mode::Grid;
  return Mode::Tabs;
}

void PaneArea::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (const Mode m = pick(); m != mode_ || !arranged_) arrange(m);
}

void PaneArea::arrange(Mode mode) {
  const int current = tabs_ ? tabs_->currentIndex() : 0;
  for (PolicyPane* p : panes_) p->setParent(this);  // out of the old container, kept alive
  if (container_) container_->deleteLater();
  tabs_ = nullptr;
  mode_ = mode;
  arranged_ = true;
  if (mode == Mode::Tabs) {
    tabs_ = new QTabWidget;
    tabs_->setObjectName("pane_tabs");
    tabs_->setDocumentMode(true);
    for (PolicyPane* p : panes_) tabs_->addTab(p, policy_title(p->policy()));
    tabs_->setCurrentIndex(std::clamp(current, 0, std::max(0, int(panes_.size()) - 1)));
    container_ = tabs_;
  } else if (mode == Mode::Grid) {
    auto* rows = new QSplitter(Qt::Vertical);
    for (int r = 0; r < 2; ++r) {
      auto* row = new QSplitter(Qt::Horizontal);
      row->setChildrenCollapsible(false);
      for (int c = 0; c < 2; ++c) row->addWidget(panes_[size_t(r * 2 + c)]);
      rows->addWidget(row);
    }
    rows->setChildrenCollapsible(false);
    container_ = rows;
  } else {
    auto* columns = new QSplitter(Qt::Horizontal);
    columns->setChildrenCollapsible(false);
    for (PolicyPane* p : panes_) columns->addWidget(p);
    container_ = columns;
  }
  layout()->addWidget(container_);
  // Splitters show every pane; a tab widget shows its current page alone
  // (showing the others would draw them over it).
  if (mode != Mode::Tabs)
    for (PolicyPane* p : panes_) p->show();
}

}  // namespace h2o::ui
