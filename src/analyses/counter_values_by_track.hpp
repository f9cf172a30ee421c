// A run's counter values grouped by track, for the analyses that read each
// track's values in turn (the diagnosis' facts, the HTML report's series):
// each track's values as 32-bit indices into run.counter_values, all tracks'
// in one array. An hour of eight ranks has 12 million values: 47 MB so,
// where a list per track of pointers took 95 MB and of (time, value) 190.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

class CounterValuesByTrack {
 public:
  // Each track's values in the run's order. Values of a track the run does
  // not have are left out.
  explicit CounterValuesByTrack(const Run& run);

  size_t tracks() const { return starts_.size() - 1; }
  size_t count(CounterTrackId track) const { return starts_[track + 1] - starts_[track]; }
  // fn(value) for each of the track's values, in the order held.
  template <class Fn>
  void for_each(CounterTrackId track, Fn fn) const {
    for (size_t i = starts_[track]; i < starts_[track + 1]; ++i) fn((*values_)[indices_[i]]);
  }
  // Puts each track's values in time order (the run's order among equal times).
  void sort_by_time();

 private:
  const std::vector<CounterValue>* values_;
  std::vector<size_t> starts_;     // track t's values are indices_[starts_[t], starts_[t + 1])
  std::vector<uint32_t> indices_;  // into *values_, grouped by track
};

}  // namespace stepscope
