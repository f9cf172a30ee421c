// Temporal breakdown and communication/computation overlap (HTA's
// get_temporal_breakdown and get_comm_comp_overlap).
#include <algorithm>

#include "analyses/device/gpu.hpp"

namespace stepscope {

namespace {

// The union of the activity a filter selects; events come sorted by start.
template <typename Select>
std::vector<Interval> union_of(const Run& run, const DeviceActivity& activity, Select select) {
  SortedUnion merged(activity.events.size());
  for (const DeviceEvent& event : activity.events) {
    if (!select(event)) continue;
    const Span& span = run.spans[event.span];
    merged.add({span.start_ns, span.end_ns});
  }
  return merged.take();
}

std::vector<Interval> union_of_class(const Run& run, const DeviceActivity& activity, KernelClass kind) {
  return union_of(run, activity, [kind](const DeviceEvent& e) { return e.kind == kind; });
}

}  // namespace

GpuTemporal gpu_temporal(const Run& run, const DeviceActivity& activity) {
  GpuTemporal t;
  std::vector<Interval> busy = union_of(run, activity, [](const DeviceEvent&) { return true; });
  if (busy.empty()) return t;
  int64_t last_end = 0;
  for (const Interval& interval : busy) last_end = std::max(last_end, interval.end_ns);
  t.span_ns = last_end - busy.front().start_ns;
  t.busy_ns = total_length(busy);
  t.idle_ns = t.span_ns - t.busy_ns;
  std::vector<Interval> compute = union_of_class(run, activity, KernelClass::kComputation);
  std::vector<Interval> communication = union_of_class(run, activity, KernelClass::kCommunication);
  t.compute_ns = total_length(compute);
  t.non_compute_ns = t.busy_ns - t.compute_ns;
  t.communication_ns = total_length(communication);
  t.memory_ns = total_length(union_of_class(run, activity, KernelClass::kMemory));
  if (t.communication_ns > 0) {
    t.comm_comp_overlap = static_cast<double>(overlap_length(communication, compute)) /
                          static_cast<double>(t.communication_ns);
  }
  return t;
}

}  // namespace stepscope
