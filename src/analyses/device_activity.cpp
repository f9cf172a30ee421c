#include "analyses/device_activity.hpp"

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <string_view>

#include "analyses/profiler_steps.hpp"

namespace stepscope {

bool is_device_activity(SpanKind kind) {
  return kind == SpanKind::kKernel || kind == SpanKind::kMemcpy || kind == SpanKind::kMemset;
}

DeviceLaunches::DeviceLaunches(const Run& run) {
  std::vector<std::pair<int64_t, SpanId>> calls;  // (correlation, runtime call)
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    if (span.kind == SpanKind::kRuntimeCall && span.correlation != 0) calls.emplace_back(span.correlation, i);
  }
  std::sort(calls.begin(), calls.end());  // ties: the first call in the trace
  auto find = [&calls](int64_t correlation) {
    auto found = std::lower_bound(calls.begin(), calls.end(), std::pair<int64_t, SpanId>{correlation, 0});
    return found != calls.end() && found->first == correlation ? found->second : kNoLaunch;
  };
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    if (!is_device_activity(span.kind)) continue;
    activity_.push_back({i, span.correlation != 0 ? find(span.correlation) : kNoLaunch});
  }
}

namespace {

struct StepMarkers {
  size_t distinct = 0;
  int64_t last_start_ns = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> complete_ns;
};

// ProfilerStep#N ranges on the host (HTA counts distinct step names and cuts
// at the start of the latest one).
StepMarkers profiler_steps(const Run& run) {
  std::vector<const Span*> steps = profiler_step_spans(run);
  std::vector<StringId> names;
  for (const Span* step : steps) names.push_back(step->name);
  std::sort(names.begin(), names.end());
  StepMarkers markers;
  markers.distinct = static_cast<size_t>(std::unique(names.begin(), names.end()) - names.begin());
  if (markers.distinct >= 2) {
    markers.last_start_ns = steps.back()->start_ns;
    steps.pop_back();
  }
  for (const Span* step : steps) markers.complete_ns.push_back(step->end_ns - step->start_ns);
  return markers;
}

}  // namespace

DeviceActivity collect_device_activity(const Run& run) { return collect_device_activity(run, DeviceLaunches(run)); }

DeviceActivity collect_device_activity(const Run& run, const DeviceLaunches& launches) {
  DeviceActivity activity;
  StepMarkers steps = profiler_steps(run);
  activity.profiler_steps = steps.distinct;
  activity.complete_steps_only = steps.distinct >= 2;
  activity.complete_step_ns = std::move(steps.complete_ns);
  for (auto [i, launch] : launches.activity()) {
    const Span& span = run.spans[i];
    if (activity.complete_steps_only) {
      bool lost_launch = span.correlation != 0 && launch == kNoLaunch;
      int64_t issued = launch != kNoLaunch ? run.spans[launch].start_ns : span.start_ns;
      if (lost_launch || issued >= steps.last_start_ns) {
        activity.left_out++;
        continue;
      }
    }
    activity.events.push_back({i, launch, classify_kernel(span.kind, run.strings.get(span.name))});
  }
  std::stable_sort(activity.events.begin(), activity.events.end(),
                   [&](const DeviceEvent& a, const DeviceEvent& b) {
                     const Span& x = run.spans[a.span];
                     const Span& y = run.spans[b.span];
                     return std::tie(x.start_ns, x.end_ns) < std::tie(y.start_ns, y.end_ns);
                   });
  return activity;
}

std::optional<int64_t> trace_rank(const Run& run) {
  auto found = run.metadata.find("distributedInfo");
  if (found == run.metadata.end()) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::padded_string json(found->second);
  simdjson::dom::element root;
  if (parser.parse(json).get(root)) return std::nullopt;
  int64_t rank = 0;
  if (root["rank"].get_int64().get(rank)) return std::nullopt;
  return rank;
}

}  // namespace stepscope
