#include "analyses/device/activity.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "analyses/steps/profiler_steps.hpp"
#include "util/nearly_sorted.hpp"

namespace stepscope {

bool is_device_activity(SpanKind kind) {
  return kind == SpanKind::kKernel || kind == SpanKind::kMemcpy || kind == SpanKind::kMemset;
}

namespace {

// The runtime call of each correlation, the first in the trace when several
// share one. Kineto writes the calls almost in correlation order and their
// device activity in it: the (correlation, call) pairs need sorting only
// where they are out of place, and each search starts from where the last
// one ended (galloping), where a binary search over all missed the cache at
// every step.
class LaunchFinder {
 public:
  using Call = std::pair<int64_t, SpanId>;  // (correlation, runtime call)

  // `calls` in trace order.
  explicit LaunchFinder(std::vector<Call> calls) : calls_(std::move(calls)) {
    // Ties: the first call in the trace (the span ids make the order total).
    sort_nearly_sorted(std::span<Call>(calls_), std::less<Call>());
  }

  SpanId find(int64_t correlation) {
    Call key{correlation, 0};
    size_t at = lower_bound_near_last(key);
    last_ = at;
    return at < calls_.size() && calls_[at].first == correlation ? calls_[at].second : kNoLaunch;
  }

 private:
  // std::lower_bound's answer, searched onward from the last answer when the
  // key is past it: steps of 1, 2, 4, ... then a binary search in the last step.
  size_t lower_bound_near_last(const Call& key) const {
    auto begin = calls_.begin();
    if (last_ >= calls_.size() || !(calls_[last_] < key)) {
      return static_cast<size_t>(std::lower_bound(begin, begin + static_cast<std::ptrdiff_t>(last_), key) - begin);
    }
    size_t step = 1;
    while (last_ + step < calls_.size() && calls_[last_ + step] < key) step *= 2;
    size_t below = last_ + step / 2;  // known to be less than the key
    size_t bound = std::min(last_ + step, calls_.size());
    auto found = std::lower_bound(begin + static_cast<std::ptrdiff_t>(below + 1),
                                  begin + static_cast<std::ptrdiff_t>(bound), key);
    return static_cast<size_t>(found - begin);
  }

  std::vector<Call> calls_;
  size_t last_ = 0;
};

}  // namespace

DeviceLaunches::DeviceLaunches(const Run& run) {
  // One pass over the spans for both the calls and the activity: the passes
  // over millions of spans are bound by memory, not by the work per span.
  std::vector<LaunchFinder::Call> calls;
  std::vector<int64_t> correlations;  // of each activity_
  ProfilerStepFinder steps(run.strings);
  // Room for a launch or an activity per span: regrowing millions would copy
  // them and touch their pages twice, where capacity never touched costs
  // nothing.
  calls.reserve(run.spans.size());
  activity_.reserve(run.spans.size());
  correlations.reserve(run.spans.size());
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    if (span.kind == SpanKind::kRuntimeCall && span.correlation != 0) {
      calls.emplace_back(span.correlation, i);
    } else if (is_device_activity(span.kind)) {
      activity_.push_back({i, kNoLaunch});
      correlations.push_back(span.correlation);
    } else if (steps.is_step(span)) {
      profiler_steps_.push_back(&span);
    }
  }
  ProfilerStepFinder::order_by_start(profiler_steps_);
  LaunchFinder launches(std::move(calls));
  for (size_t a = 0; a < activity_.size(); ++a) {
    if (correlations[a] != 0) activity_[a].launch = launches.find(correlations[a]);
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
StepMarkers profiler_steps(std::vector<const Span*> steps) {
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

// By start, then end, then trace order (the order they came in). The times
// are held next to each event's position: a comparator that read
// run.spans[id] would miss the cache on most comparisons.
void sort_by_time(const Run& run, std::vector<DeviceEvent>& events) {
  auto starts_before = [&run](const DeviceEvent& a, const DeviceEvent& b) {
    const Span& x = run.spans[a.span];
    const Span& y = run.spans[b.span];
    return std::tie(x.start_ns, x.end_ns) < std::tie(y.start_ns, y.end_ns);
  };
  if (std::is_sorted(events.begin(), events.end(), starts_before)) return;  // as Kineto writes them
  struct Keyed {
    int64_t start_ns;
    int64_t end_ns;
    size_t at;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const Span& span = run.spans[events[i].span];
    keyed.push_back({span.start_ns, span.end_ns, i});
  }
  sort_nearly_sorted(std::span<Keyed>(keyed), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.start_ns, a.end_ns, a.at) < std::tie(b.start_ns, b.end_ns, b.at);
  });
  std::vector<DeviceEvent> sorted;
  sorted.reserve(events.size());
  for (const Keyed& k : keyed) sorted.push_back(events[k.at]);
  events = std::move(sorted);
}

}  // namespace

DeviceActivity collect_device_activity(const Run& run) { return collect_device_activity(run, DeviceLaunches(run)); }

DeviceActivity collect_device_activity(const Run& run, const DeviceLaunches& launches) {
  DeviceActivity activity;
  StepMarkers steps = profiler_steps(launches.profiler_steps());
  activity.profiler_steps = steps.distinct;
  activity.complete_steps_only = steps.distinct >= 2;
  activity.complete_step_ns = std::move(steps.complete_ns);
  activity.events.reserve(launches.activity().size());
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
  sort_by_time(run, activity.events);
  return activity;
}

}  // namespace stepscope
