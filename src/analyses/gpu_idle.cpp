// Idle time per stream by cause (HTA's get_idle_time_breakdown).
#include <algorithm>

#include "analyses/gpu.hpp"

namespace stepscope {

namespace {


void classify_gap(const Run& run, const DeviceEvent& event, int64_t previous_end_ns, StreamIdle& stream) {
  const Span& span = run.spans[event.span];
  // Overlapping activity on one stream (clock skew) is no idle time.
  int64_t gap = std::max<int64_t>(0, span.start_ns - previous_end_ns);
  bool host_wait = event.launch != kNoLaunch && run.spans[event.launch].start_ns > previous_end_ns;
  if (host_wait) {
    stream.host_wait_ns += gap;
  } else if (gap < kKernelWaitThresholdNs) {
    stream.kernel_wait_ns += gap;
  } else {
    stream.other_ns += gap;
  }
}

}  // namespace

std::vector<StreamIdle> gpu_idle_by_stream(const Run& run, const DeviceActivity& activity) {
  // Events by stream, keeping the time order within each.
  std::vector<const DeviceEvent*> events;
  events.reserve(activity.events.size());
  for (const DeviceEvent& event : activity.events) events.push_back(&event);
  std::stable_sort(events.begin(), events.end(), [&](const DeviceEvent* a, const DeviceEvent* b) {
    const Span& x = run.spans[a->span];
    const Span& y = run.spans[b->span];
    return std::tie(x.pid, x.tid) < std::tie(y.pid, y.tid);
  });
  std::vector<StreamIdle> streams;
  int64_t first_start = 0, last_end = 0;
  for (const DeviceEvent* event : events) {
    const Span& span = run.spans[event->span];
    if (streams.empty() || streams.back().pid != span.pid || streams.back().tid != span.tid) {
      if (!streams.empty()) streams.back().span_ns = last_end - first_start;
      streams.push_back({.pid = span.pid, .tid = span.tid});
      first_start = span.start_ns;
      last_end = span.end_ns;
    } else {
      classify_gap(run, *event, last_end, streams.back());
      last_end = std::max(last_end, span.end_ns);
    }
    streams.back().events++;
  }
  if (!streams.empty()) streams.back().span_ns = last_end - first_start;
  return streams;
}

}  // namespace stepscope
