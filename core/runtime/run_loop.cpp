#include "core/runtime/run_loop.h"

#include "core/base/stopwatch.h"

namespace h2o {

std::optional<StepRecord> EngineSource::next() {
  if (engine_.done()) return std::nullopt;
  return engine_.step(schedule_);
}

std::string EngineSource::end_reason() const {
  if (engine_.all_stopped()) return "run over: every session has stopped";
  return engine_.turns().empty() ? "run finished: the whole text has been scored" : "run finished: every turn has been answered";
}

std::optional<StepRecord> RunLoop::step() {
  std::optional<StepRecord> record = next();
  if (record) deliver(*record);
  return record;
}

std::optional<StepRecord> RunLoop::next() {
  StageTimer timer(source_seconds_);
  return source_.next();
}

void RunLoop::deliver(StepRecord& record) {
  if (prepare_) {
    StageTimer timer(prepare_seconds_);
    prepare_(record);
  }
  for (StepSink* sink : sinks_) sink->write(record);
}

std::vector<std::string> stop_messages(const std::vector<PolicyConfig>& policies, const StepRecord& record,
                                       bool run_over) {
  std::vector<std::string> out;
  for (const SessionRecord& s : record.sessions) {
    if (s.stopped.empty()) continue;
    const std::string who = s.session >= 0 && size_t(s.session) < policies.size()
                                ? policies[size_t(s.session)].describe()
                                : "session " + std::to_string(s.session);
    out.push_back(who + " stopped: " + s.stopped + " (step " + std::to_string(record.step) + ")" +
                  (run_over ? "" : "; the other sessions go on"));
  }
  return out;
}

}  // namespace h2o
