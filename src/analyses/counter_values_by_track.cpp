#include "analyses/counter_values_by_track.hpp"

#include <algorithm>
#include <stdexcept>

namespace stepscope {

CounterValuesByTrack::CounterValuesByTrack(const Run& run)
    : values_(&run.counter_values), starts_(run.counter_tracks.size() + 1, 0) {
  const std::vector<CounterValue>& all = run.counter_values;
  if (all.size() > UINT32_MAX) throw std::length_error("more counter values than an index of 32 bits can name");
  for (const CounterValue& v : all) {
    if (v.track < tracks()) ++starts_[v.track + 1];
  }
  for (size_t t = 0; t < tracks(); ++t) starts_[t + 1] += starts_[t];
  indices_.resize(starts_.back());
  std::vector<size_t> next(starts_.begin(), starts_.end() - 1);
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].track < tracks()) indices_[next[all[i].track]++] = static_cast<uint32_t>(i);
  }
}

void CounterValuesByTrack::sort_by_time() {
  const std::vector<CounterValue>& all = *values_;
  auto earlier = [&all](uint32_t a, uint32_t b) { return all[a].ts_ns < all[b].ts_ns; };
  for (size_t t = 0; t < tracks(); ++t) {
    auto first = indices_.begin() + static_cast<std::ptrdiff_t>(starts_[t]);
    auto last = indices_.begin() + static_cast<std::ptrdiff_t>(starts_[t + 1]);
    // A recording's values come in time order: most tracks need no sort.
    if (!std::is_sorted(first, last, earlier)) std::stable_sort(first, last, earlier);
  }
}

}  // namespace stepscope
