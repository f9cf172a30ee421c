#include "analyses/live_counters.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

namespace stepscope {

namespace {

constexpr double kPercent = 0.01;

// "gpu.3.util_percent" -> 3, when `name` is gpu.N.`quantity`.
std::optional<int> gpu_index(std::string_view name, std::string_view quantity) {
  constexpr std::string_view kPrefix = "gpu.";
  if (name.substr(0, kPrefix.size()) != kPrefix || name.size() <= kPrefix.size() + quantity.size() + 1) return {};
  std::string_view rest = name.substr(kPrefix.size());
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || rest.substr(dot + 1) != quantity || dot == 0) return {};
  int index = 0;
  for (char c : rest.substr(0, dot)) {
    if (c < '0' || c > '9' || index > 100000) return {};
    index = index * 10 + (c - '0');
  }
  return index;
}

}  // namespace

void LiveCounters::update(const Run& run) {
  next_value_ = std::max(next_value_, run.counter_values_dropped);
  for (; next_value_ < run.counter_values_dropped + run.counter_values.size(); ++next_value_) {
    const CounterValue& v = run.counter_values[next_value_ - run.counter_values_dropped];
    const CounterTrack& track = run.counter_tracks.at(v.track);
    std::string_view name = run.strings.get(track.name);
    if (name == "process.rss_bytes") {
      gauges_.process_rss_bytes[track.pid] = v.value;
    } else if (name == "process.cpu_percent") {
      gauges_.process_cpu_ratio[track.pid] = v.value * kPercent;
    } else if (auto util = gpu_index(name, "util_percent")) {
      gauges_.gpu_utilization_ratio[*util] = v.value * kPercent;
    } else if (auto memory = gpu_index(name, "memory_used_bytes")) {
      gauges_.gpu_memory_used_bytes[*memory] = v.value;
    }
  }
}

}  // namespace stepscope
