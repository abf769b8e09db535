#include "ui/shell/pane_area.h"

#include <QFontMetricsF>
#include <QSplitter>
#include <cmath>
#include <QTabBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/views/policy_pane.h"
#include "ui/views/token_flow_view.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

PaneArea::PaneArea(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  // Explicit: the panes' least sizes pick the arrangement, they never grow the window past the screen.
  setMinimumSize(200, 150);
}

int PaneArea::minimumPaneWidth() { return int(300 * ui_scale()); }

// 34 characters of a pane's answer a line at the app's scale: what is left to a pane before the panes
// become tabs. (The comfortable 300 px times the scale asked 600 px at --ui-scale 2, so three panes
// beside the controls on a 1080p screen, 538 px each, became tabs, no comparison left; 34
// characters take about 500 px there.)
int PaneArea::leastPaneWidth() {
  constexpr int kLineCharacters = 34, kScrollBarAndMargins = 30;
  const double line = QFontMetricsF(TokenFlowView::textFontAt(1.0)).horizontalAdvance(QString(kLineCharacters, 'n'));
  return std::min(minimumPaneWidth(), std::max(300, int(std::ceil(line)) + kScrollBarAndMargins));
}
void PaneArea::setPanes(std::vector<PolicyPane*> panes) {
  for (PolicyPane* p : panes_) {
    p->hide();
    p->deleteLater();
  }
  panes_ = std::move(panes);
  arranged_ = false;
  arrange(pick(height()));
}

QSize PaneArea::leastPane(PolicyPane::Arrangement arrangement) const {
  QSize least;
  for (PolicyPane* p : panes_) least = least.expandedTo(p->minimumFor(arrangement));
  return least;
}

// Four panes prefer the 2x2 grid to four narrow columns; fewer go side by side.
PaneArea::Mode PaneArea::pick(int height) const {
  const int n = int(panes_.size());
  if (n <= 1) return Mode::Columns;
  const QSize stacked = leastPane(PolicyPane::Arrangement::Stacked);
  const QSize wide = leastPane(PolicyPane::Arrangement::Wide);
  const int column = std::max(minimumPaneWidth(), stacked.width());
  const bool columns_fit = width() / n >= column && height >= stacked.height();
  const bool grid_fits = n == 4 && width() / 2 >= wide.width() && height / 2 >= wide.height();
  if (columns_fit && (n < 4 || !grid_fits || width() / n >= column * 5 / 4)) return Mode::Columns;
  if (grid_fits) return Mode::Grid;
  // Still side by side, narrower than is comfortable, then with the rasters beside each heatmap
  // (half the height), rather than one pane at a time.
  const int least = leastPaneWidth();
  if (width() / n >= std::max(least, stacked.width()) && height >= stacked.height()) return Mode::Columns;
  if (width() / n >= std::max(least, wide.width()) && height >= wide.height()) return Mode::WideColumns;
  return Mode::Tabs;
}

// pick()'s rule: the arrangement it prefers where height is no limit, and the least of the heights
// the two side-by-side arrangements need (the grid's with room for the splitter's handle between
// its rows) at which it picks that one.
int PaneArea::heightNeeded() const {
  if (panes_.size() <= 1) return 0;
  const Mode preferred = pick(QWIDGETSIZE_MAX);
  if (preferred == Mode::Tabs) return 0;
  const int columns = leastPane(PolicyPane::Arrangement::Stacked).height();
  const int grid = 2 * leastPane(PolicyPane::Arrangement::Wide).height() + 8;
  for (const int height : {std::min(columns, grid), std::max(columns, grid)})
    if (pick(height) == preferred) return height;
  return 0;
}

int PaneArea::tabHeightNeeded() const {
  if (panes_.empty()) return 0;
  const int bar = tabs_ ? tabs_->tabBar()->sizeHint().height() : QTabWidget().tabBar()->sizeHint().height();
  return leastPane(PolicyPane::Arrangement::Wide).height() + bar + 4;
}

void PaneArea::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (const Mode m = pick(height()); m != mode_ || !arranged_) arrange(m);
  else if (mode_ == Mode::Tabs) arrangeTabs();
  keepEven();
}

void PaneArea::keepEven() {
  if (dragged_) return;
  // Equal shares: a splitter scales them to its size.
  for (QSplitter* s : splitters_) s->setSizes(QList<int>(s->count(), 1000));
}

void PaneArea::watchHandles(QSplitter* splitter) {
  splitters_.push_back(splitter);
  connect(splitter, &QSplitter::splitterMoved, this, [this, splitter] {
    dragged_ = true;
    // The grid's two rows keep one set of columns: a drag in one moves the other's too.
    if (splitter->orientation() == Qt::Horizontal && mode_ == Mode::Grid)
      for (QSplitter* other : splitters_)
        if (other != splitter && other->orientation() == Qt::Horizontal) other->setSizes(splitter->sizes());
  });
}

// A tab has the whole width: stacked where the height allows, else wide (rasters beside the heatmap).
void PaneArea::arrangeTabs() {
  const bool stacked_fits = height() >= leastPane(PolicyPane::Arrangement::Stacked).height() + 30;
  for (PolicyPane* p : panes_)
    p->setArrangement(stacked_fits ? PolicyPane::Arrangement::Stacked : PolicyPane::Arrangement::Wide);
}

void PaneArea::arrange(Mode mode) {
  const int current = tabs_ ? tabs_->currentIndex() : 0;
  for (PolicyPane* p : panes_) p->setParent(this);  // out of the old container, kept alive
  // Out of the layout now: deleteLater waits for the event loop it was called from, and a
  // nested one (a modal dialog, the screenshot's wait) would leave it taking half the height.
  if (container_) {
    layout()->removeWidget(container_);
    container_->hide();
    container_->deleteLater();
  }
  tabs_ = nullptr;
  splitters_.clear();
  dragged_ = false;
  mode_ = mode;
  arranged_ = true;
  if (mode == Mode::Columns || mode == Mode::WideColumns)
    for (PolicyPane* p : panes_)
      p->setArrangement(mode == Mode::Columns ? PolicyPane::Arrangement::Stacked : PolicyPane::Arrangement::Wide);
  if (mode == Mode::Tabs) arrangeTabs();
  if (mode == Mode::Tabs) {
    tabs_ = new QTabWidget;
    tabs_->setObjectName("pane_tabs");
    tabs_->setDocumentMode(true);
    for (PolicyPane* p : panes_) tabs_->addTab(p, policy_title(p->policy()));
    tabs_->setCurrentIndex(std::clamp(current, 0, std::max(0, int(panes_.size()) - 1)));
    container_ = tabs_;
  } else if (mode == Mode::Grid) {
    for (PolicyPane* p : panes_) p->setArrangement(PolicyPane::Arrangement::Wide);
    auto* rows = new QSplitter(Qt::Vertical);
    for (int r = 0; r < 2; ++r) {
      auto* row = new QSplitter(Qt::Horizontal);
      row->setChildrenCollapsible(false);
      for (int c = 0; c < 2; ++c) row->addWidget(panes_[size_t(r * 2 + c)]);
      rows->addWidget(row);
      watchHandles(row);
    }
    rows->setChildrenCollapsible(false);
    watchHandles(rows);
    container_ = rows;
  } else {
    auto* columns = new QSplitter(Qt::Horizontal);
    columns->setChildrenCollapsible(false);
    for (PolicyPane* p : panes_) columns->addWidget(p);
    watchHandles(columns);
    container_ = columns;
  }
  keepEven();
  layout()->addWidget(container_);
  // Splitters show every pane; a tab widget shows its current page alone
  // (showing the others would draw them over it).
  if (mode != Mode::Tabs)
    for (PolicyPane* p : panes_) p->show();
}

}  // namespace h2o::ui
