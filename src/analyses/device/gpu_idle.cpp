// Idle time per stream by cause (HTA's get_idle_time_breakdown).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "analyses/device/gpu.hpp"

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

// The events by stream, streams by (pid, tid), each stream's in time order
// as they came: a counting sort over the few streams, where a stable sort of
// a million events read a span per comparison.
std::vector<const DeviceEvent*> by_stream(const Run& run, const std::vector<DeviceEvent>& events) {
  using Stream = std::pair<int64_t, int64_t>;
  std::vector<Stream> streams;  // in first-seen order
  std::vector<uint32_t> stream_of(events.size());
  uint32_t last = UINT32_MAX;
  for (size_t i = 0; i < events.size(); ++i) {
    const Span& span = run.spans[events[i].span];
    Stream stream{span.pid, span.tid};
    if (last == UINT32_MAX || streams[last] != stream) {
      // Streams are few: a linear search beats a map.
      last = static_cast<uint32_t>(std::find(streams.begin(), streams.end(), stream) - streams.begin());
      if (last == streams.size()) streams.push_back(stream);
    }
    stream_of[i] = last;
  }
  std::vector<uint32_t> by_key(streams.size());
  for (uint32_t i = 0; i < by_key.size(); ++i) by_key[i] = i;
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) { return streams[a] < streams[b]; });
  std::vector<size_t> next(streams.size() + 1, 0);  // where each stream's events go, by first-seen number
  for (uint32_t s : stream_of) next[s]++;
  size_t at = 0;
  for (uint32_t s : by_key) {
    size_t count = next[s];
    next[s] = at;
    at += count;
  }
  std::vector<const DeviceEvent*> out(events.size());
  for (size_t i = 0; i < events.size(); ++i) out[next[stream_of[i]]++] = &events[i];
  return out;
}

}  // namespace

std::vector<StreamIdle> gpu_idle_by_stream(const Run& run, const DeviceActivity& activity) {
  std::vector<const DeviceEvent*> events = by_stream(run, activity.events);
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
