#pragma once
// The hand-over of snapshots from the worker thread to the GUI thread: one
// slot per kind holding only the newest snapshot. The worker replaces what
// the GUI has not drawn yet (so a slow frame drops stale pictures instead of
// queueing them), and the GUI never waits: take() returns null when empty.
#include <memory>
#include <mutex>
#include <utility>

namespace h2o::ui {

template <class T>
class LatestSlot {
 public:
  // Stores `value`, dropping any older one; true if the slot was empty (the
  // GUI must be told), false if a notification is already on its way.
  bool put(std::shared_ptr<const T> value) {
    std::lock_guard lock(mutex_);
    const bool was_empty = !value_;
    value_ = std::move(value);
    if (!was_empty) ++dropped_;
    return was_empty;
  }
  std::shared_ptr<const T> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(value_, nullptr);
  }
  bool empty() const {
    std::lock_guard lock(mutex_);
    return !value_;
  }
  long dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> value_;
  long dropped_ = 0;
};

}  // namespace h2o::ui
