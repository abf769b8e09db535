#include "core/runtime/step_pipeline.h"

#include <algorithm>
#include <utility>

namespace h2o {

void thin_step(StepRecord& record) {
  record.thinned = true;
  for (SessionRecord& s : record.sessions)
    if (s.attention.size() > 1) s.attention.resize(1);
}

StepPipeline::StepPipeline(RunLoop& loop, std::mutex& state, PipelineOptions options)
    : loop_(loop), state_(state), options_(options) {
  thread_ = std::thread([this] { run(); });
}

StepPipeline::~StepPipeline() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StepPipeline::push(StepRecord record) {
  std::unique_lock lock(queue_mutex_);
  rethrow_failure();
  if (options_.thinning && queue_.size() >= options_.thin_at) {
    thin_step(record);
    ++thinned_;
  }
  room_.wait(lock, [&] { return queue_.size() < options_.capacity || failure_; });
  rethrow_failure();
  queue_.push_back(std::move(record));
  wake_.notify_one();
}

void StepPipeline::drain() {
  std::unique_lock lock(queue_mutex_);
  idle_.wait(lock, [&] { return (queue_.empty() && !busy_) || failure_; });
  rethrow_failure();
}

bool StepPipeline::behind() const {
  std::lock_guard lock(queue_mutex_);
  return queue_.size() >= std::max<size_t>(1, options_.thin_at / 2);
}

int64_t StepPipeline::thinned_steps() const {
  std::lock_guard lock(queue_mutex_);
  return thinned_;
}

void StepPipeline::set_after_step(std::function<void()> after) {
  std::lock_guard lock(after_mutex_);
  after_ = std::move(after);
}

void StepPipeline::rethrow_failure() {
  if (!failure_) return;
  std::exception_ptr failure = std::exchange(failure_, nullptr);
  std::rethrow_exception(failure);
}

void StepPipeline::run() {
  std::unique_lock lock(queue_mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and every step handed over went through
    StepRecord record = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    room_.notify_one();
    lock.unlock();
    std::exception_ptr failure;
    try {
      {
        std::lock_guard state(state_);
        loop_.deliver(record);
      }
      std::lock_guard after(after_mutex_);
      if (after_) after_();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failure) {
      // The steps after a failed one would not follow it: they are dropped, and the owner hears why.
      failure_ = failure;
      queue_.clear();
      room_.notify_all();
    }
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace h2o
