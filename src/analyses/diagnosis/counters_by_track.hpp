// A run's counter values grouped by track, for the diagnosis' system facts
// (CPU, disks, memory): grouped once per run, read per rank.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

class CountersByTrack {
 public:
  explicit CountersByTrack(const Run& run) : run_(run), values_(run.counter_tracks.size()) {
    for (const CounterValue& v : run.counter_values) {
      if (v.track < values_.size()) values_[v.track].push_back(&v);
    }
  }

  const std::string& name(CounterTrackId track) const { return run_.strings.get(run_.counter_tracks[track].name); }
  int64_t pid(CounterTrackId track) const { return run_.counter_tracks[track].pid; }
  size_t tracks() const { return values_.size(); }
  const std::vector<const CounterValue*>& values(CounterTrackId track) const { return values_[track]; }

  // The mean and max of one track inside [start, end); nullopt without values there.
  std::optional<std::pair<double, double>> mean_max(CounterTrackId track, int64_t start, int64_t end) const {
    double sum = 0, most = 0;
    size_t n = 0;
    for (const CounterValue* v : values_[track]) {
      if (v->ts_ns < start || v->ts_ns >= end) continue;
      sum += v->value;
      most = n == 0 ? v->value : std::max(most, v->value);
      ++n;
    }
    if (n == 0) return std::nullopt;
    return std::make_pair(sum / static_cast<double>(n), most);
  }

 private:
  const Run& run_;
  std::vector<std::vector<const CounterValue*>> values_;
};

}  // namespace stepscope
