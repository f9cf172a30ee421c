// The device activity of a Run that the GPU analyses look at, each with the
// runtime call that launched it: every kernel, copy and memset on a device
// stream, whatever the vendor (kinds, not CUDA names, decide; annotations
// mirrored onto a stream and synchronizations are not activity).
//
// Like Holistic Trace Analysis, when the trace has two or more ProfilerStep#N
// markers the last step is taken to be cut short by the profiler: only
// activity launched before the last step begins counts (activity whose launch
// is not in the trace is then left out too, as HTA does).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyses/device/kernel_class.hpp"
#include "run/run.hpp"

namespace stepscope {

bool is_device_activity(SpanKind kind);

inline constexpr SpanId kNoLaunch = UINT32_MAX;

struct DeviceEvent {
  SpanId span = 0;
  SpanId launch = kNoLaunch;  // the runtime call with the same correlation
  KernelClass kind = KernelClass::kComputation;
};

struct DeviceActivity {
  std::vector<DeviceEvent> events;  // by start time (then end, then trace order)
  size_t profiler_steps = 0;        // ProfilerStep#N markers in the trace
  bool complete_steps_only = false; // the last step's activity is left out
  size_t left_out = 0;              // events dropped by that rule
  // Durations of the host's ProfilerStep ranges, the last one left out when
  // there are two or more.
  std::vector<int64_t> complete_step_ns;
};

class DeviceLaunches;
DeviceActivity collect_device_activity(const Run& run);
// The same with the launches `report` joined once for all its analyses.
DeviceActivity collect_device_activity(const Run& run, const DeviceLaunches& launches);

// Every piece of device activity (is_device_activity) in trace order with
// the runtime call that launched it (kNoLaunch without a correlation or when
// the call is not in the trace): the join ops and the device analyses both
// read, made once per Run. Launches are found by binary search in the
// (correlation, call) pairs sorted once, not by a hash lookup per event.
struct LaunchedActivity {
  SpanId span = 0;
  SpanId launch = kNoLaunch;
};
//
// The same pass finds the ProfilerStep#N ranges (profiler_step_spans), which
// the device activity's cut reads and the trace's steps too.
class DeviceLaunches {
 public:
  explicit DeviceLaunches(const Run& run);
  const std::vector<LaunchedActivity>& activity() const { return activity_; }
  const std::vector<const Span*>& profiler_steps() const { return profiler_steps_; }

 private:
  std::vector<LaunchedActivity> activity_;
  std::vector<const Span*> profiler_steps_;  // as profiler_step_spans gives them
};

}  // namespace stepscope
