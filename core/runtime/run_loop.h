#pragma once
// The one run loop of the CLI and the app (Qt-free): step records come from
// a source — a live engine, or a recording being replayed — and go to every
// sink — the run's logs, the recording spool, the app's analyzer. What a
// front end adds is only how it reports (stderr lines, signals to widgets).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime/engine.h"

namespace h2o {

// Where records come from.
class StepSource {
 public:
  virtual ~StepSource() = default;
  // The next step's record, or nullopt once the run has nothing more to give.
  virtual std::optional<StepRecord> next() = 0;
  // Why next() gave nothing ("replay finished", "run over: every session has stopped", ...).
  virtual std::string end_reason() const = 0;
};

// Where records go.
class StepSink {
 public:
  virtual ~StepSink() = default;
  virtual void write(const StepRecord& record) = 0;
};

// A live engine as a source, reading out what `schedule` asks each step.
class EngineSource final : public StepSource {
 public:
  explicit EngineSource(Engine& engine, const CaptureSchedule* schedule = nullptr)
      : engine_(engine), schedule_(schedule) {}
  std::optional<StepRecord> next() override;
  std::string end_reason() const override;
  void set_schedule(const CaptureSchedule* schedule) { schedule_ = schedule; }

 private:
  Engine& engine_;
  const CaptureSchedule* schedule_;
};

class RunLoop {
 public:
  explicit RunLoop(StepSource& source) : source_(source) {}
  void add_sink(StepSink& sink) { sinks_.push_back(&sink); }
  // Applied to every record before any sink sees it (a recording's rounding,
  // so that what a live run shows is what a replay of its recording shows).
  void set_prepare(void (*prepare)(StepRecord&)) { prepare_ = prepare; }
  // One step from the source to every sink; nullopt when the source is done.
  std::optional<StepRecord> step();
  // The same in two halves: the source's next record (timed), and the record to the sinks (prepared first).
  std::optional<StepRecord> next();
  void deliver(StepRecord& record);
  const StepSource& source() const { return source_; }
  // Seconds spent in the source's next() so far (the engine's steps, a replay's reads).
  double source_seconds() const { return source_seconds_; }
  // Seconds spent in the prepare function (set_prepare) so far.
  double prepare_seconds() const { return prepare_seconds_; }

 private:
  StepSource& source_;
  double source_seconds_ = 0, prepare_seconds_ = 0;
  void (*prepare_)(StepRecord&) = nullptr;
  std::vector<StepSink*> sinks_;
};

// One line for each session that stopped in this step (out of KV memory):
// "full stopped at step 12: out of KV memory: ...; the other sessions go on".
// `policies` names the sessions; `run_over` drops the "go on".
std::vector<std::string> stop_messages(const std::vector<PolicyConfig>& policies, const StepRecord& record,
                                       bool run_over);

}  // namespace h2o
