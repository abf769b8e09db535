#pragma once
// Messages that must not scroll away: one line each, under the toolbars,
// until what they describe is over (the CUDA choice running on the CPU, a
// model that cannot be used, a recording that stopped at its limit). Each has
// a key, so that the one who raised it can clear it; the user may close it.
#include <QMap>
#include <QWidget>

class QLabel;
class QVBoxLayout;

namespace h2o::ui {

class Banner : public QWidget {
  Q_OBJECT
 public:
  explicit Banner(QWidget* parent = nullptr);
  void set(const QString& key, const QString& text);  // replaces the key's line; empty text clears it
  void clear(const QString& key) { set(key, {}); }
  bool has(const QString& key) const { return lines_.contains(key); }
  QString text(const QString& key) const;
  QStringList keys() const { return lines_.keys(); }
  void restyle();

 signals:
  void changed();

 private:
  QVBoxLayout* layout_;
  QMap<QString, QWidget*> lines_;
};

}  // namespace h2o::ui
