#pragma once
// bertviz's model view on the recorded attention: every layer (rows) x head
// (columns) of one policy at the shown step, each a thumbnail heatmap of the
// recent captured queries over their keys. Clicking a thumbnail shows that
// layer and head in the panes.
#include <QWidget>

#include "core/analysis/snapshot.h"

class QComboBox;
class QLabel;
class QScrollArea;

namespace h2o::ui {

class ModelThumbnails;

class ModelView : public QWidget {
  Q_OBJECT
 public:
  explicit ModelView(QWidget* parent = nullptr);
  void setData(const ModelViewData& data, const std::vector<PolicyConfig>& policies, int shown_layer, int shown_head);
  const ModelViewData& data() const;
  // The grid of thumbnails, and the centre of (layer, head) in its coordinates (tests).
  QWidget* thumbnails() const;
  QPoint thumbnailCenter(int layer, int head) const;

 signals:
  void cellClicked(int layer, int head);
  void policyChosen(int policy);

 private:
  QComboBox* policy_;
  QLabel* caption_;
  ModelThumbnails* grid_;
  QScrollArea* scroll_;  // the grid, when its layers need more height than the tab has
  bool updating_ = false;
};

}  // namespace h2o::ui
