// Step figures of a run that is still being recorded, per process that steps:
// what `record --metrics` publishes while the job runs. It reads only what was
// appended to the Run since the last update (the Run only grows while it is
// recorded), so an update costs what arrived, not the whole run.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "analyses/spans/intervals.hpp"
#include "analyses/steps/steps.hpp"
#include "run/run.hpp"

namespace stepscope {

// Upper bounds of the step-time histogram, in seconds: 1 ms to 60 s.
inline constexpr std::array<double, 15> kStepSecondsBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                               0.5,   1,      2.5,   5,    10,    30,    60};

struct LiveProcessSteps {
  int64_t pid = 0;
  uint64_t steps = 0;
  std::array<uint64_t, kStepSecondsBuckets.size()> bucket_steps{};  // steps at most each bound (cumulative)
  double step_seconds = 0;
  std::optional<int64_t> samples;  // of the steps whose batches were measured; none: no step's was
  std::optional<int64_t> tokens;
  std::array<double, kStepPhaseCount> phase_seconds{};  // claimed as the steps analysis does
  int64_t last_step_end_ns = 0;                         // the run's clock
  std::optional<int64_t> last_host_peak_bytes;          // the last step that had one
  std::optional<int64_t> last_device_peak_bytes;
};

class LiveSteps {
 public:
  // Takes in the spans and counter values appended since the last call.
  void update(const Run& run);
  // By pid.
  const std::map<int64_t, LiveProcessSteps>& processes() const { return processes_; }

 private:
  using ThreadKey = std::pair<int64_t, int64_t>;
  void take_counter(const Run& run, const CounterValue& value);
  void take_phase(const Span& span);
  void take_step(const Span& step);

  size_t next_span_ = 0;
  size_t next_counter_ = 0;  // the run's number of the next counter value (Run::counter_values_dropped)
  // Phase spans of each thread not yet inside a processed step, by StepPhase.
  std::map<ThreadKey, std::array<Intervals, kStepPhaseCount>> pending_phases_;
  // The hooks' per-step counters, by name, keyed by (pid, the step's end).
  std::map<std::string, std::map<std::pair<int64_t, int64_t>, int64_t>, std::less<>> step_counters_;
  std::map<int64_t, LiveProcessSteps> processes_;
};

}  // namespace stepscope
