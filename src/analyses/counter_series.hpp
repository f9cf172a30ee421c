// Counter tracks as series small enough to draw: each track's values in
// time order, downsampled to at most `max_points` by averaging equal time
// buckets (a one-hour recording at 10 Hz has 36,000 values per track; a
// chart a thousand pixels wide shows no more than that many points).
#pragma once

#include <cstdint>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct CounterSeries {
  CounterTrackId track = 0;
  std::vector<int64_t> ts_ns;  // the mean time of each bucket's values
  std::vector<double> values;  // their mean
  size_t raw_points = 0;       // values before downsampling
};

struct CounterSeriesOptions {
  size_t max_points = 1000;
};

// One series per track that has values, in track order.
std::vector<CounterSeries> build_counter_series(const Run& run, const CounterSeriesOptions& options = {});

}  // namespace stepscope
