#pragma once
// Where the policy panes sit: side by side while each gets a readable width,
// else four as a 2x2 grid of wide panes (rasters beside the heatmap) when the
// height allows, else one tab per pane. The layout is picked again whenever the
// area is resized or the panes change, so a 1280x720 window with four panes
// keeps them all in view.
#include <QWidget>
#include <vector>

#include "ui/views/policy_pane.h"

class QSplitter;
class QTabWidget;

namespace h2o::ui {

class PaneArea : public QWidget {
  Q_OBJECT
 public:
  // Columns: side by side, each stacked; Grid: four in two rows, each wide; WideColumns: side by
  // side, each wide (rasters beside the heatmap: half the height), where a window's height (a large
  // --ui-scale) has no room for stacked columns; Tabs: one at a time, where nothing else fits.
  enum class Mode { Columns, Grid, WideColumns, Tabs };
  explicit PaneArea(QWidget* parent = nullptr);
  // Takes the panes (parented here); the old ones are deleted.
  void setPanes(std::vector<PolicyPane*> panes);
  Mode mode() const { return mode_; }
  QTabWidget* tabs() const { return tabs_; }
  // The narrowest a pane is side by side where the window has room to choose (the grid, say).
  static int minimumPaneWidth();
  // The narrowest it may be side by side at all (34 characters of its answer a line), before tabs.
  static int leastPaneWidth();
  // The least height at which every pane shows at this width (columns or the grid); 0: none fits.
  int heightNeeded() const;
  // The least height at which one pane shows whole as a tab (rasters beside its heatmap).
  int tabHeightNeeded() const;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  Mode pick(int height) const;
  QSize leastPane(PolicyPane::Arrangement arrangement) const;
  void arrange(Mode mode);
  void arrangeTabs();
  // Side-by-side panes share the width (and the grid's rows the height) evenly until the user drags
  // a handle: a splitter left to itself gave a window's added width to one column (F11: 640 and
  // 1280 px), and its two rows' columns apart.
  void keepEven();
  void watchHandles(QSplitter* splitter);

  std::vector<PolicyPane*> panes_;
  QWidget* container_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  Mode mode_ = Mode::Columns;
  bool arranged_ = false;
  std::vector<QSplitter*> splitters_;  // the side-by-side arrangement's: columns, or the grid's rows then its two rows
  bool dragged_ = false;               // a handle was dragged since the panes were arranged
};

}  // namespace h2o::ui
