#include "analyses/counter_series.hpp"

#include <utility>

#include "analyses/counter_values_by_track.hpp"

namespace stepscope {

namespace {

using Point = std::pair<int64_t, double>;

// Averages `points` (sorted by time) into at most max_points buckets of equal
// time width; empty buckets are skipped, so gaps stay gaps.
CounterSeries downsample(CounterTrackId track, const std::vector<Point>& points, size_t max_points) {
  CounterSeries series{.track = track, .ts_ns = {}, .values = {}, .raw_points = points.size()};
  if (points.size() <= max_points || max_points == 0) {
    for (const auto& [ts, value] : points) {
      series.ts_ns.push_back(ts);
      series.values.push_back(value);
    }
    return series;
  }
  const int64_t first = points.front().first;
  const double span = static_cast<double>(points.back().first - first) + 1;
  const double width = span / static_cast<double>(max_points);
  size_t i = 0;
  while (i < points.size()) {
    auto bucket = static_cast<size_t>(static_cast<double>(points[i].first - first) / width);
    double ts_sum = 0, value_sum = 0;
    size_t n = 0;
    for (; i < points.size() && static_cast<size_t>(static_cast<double>(points[i].first - first) / width) == bucket;
         ++i, ++n) {
      ts_sum += static_cast<double>(points[i].first - first);
      value_sum += points[i].second;
    }
    series.ts_ns.push_back(first + static_cast<int64_t>(ts_sum / static_cast<double>(n)));
    series.values.push_back(value_sum / static_cast<double>(n));
  }
  return series;
}

}  // namespace

std::vector<CounterSeries> build_counter_series(const Run& run, const CounterSeriesOptions& options) {
  // One track's points at a time: a copy of every track's values at once was
  // 190 MB on an hour's run, at the report's peak.
  CounterValuesByTrack by_track(run);
  by_track.sort_by_time();
  std::vector<CounterSeries> out;
  std::vector<Point> points;
  for (CounterTrackId t = 0; t < by_track.tracks(); ++t) {
    if (by_track.count(t) == 0) continue;
    points.clear();
    by_track.for_each(t, [&points](const CounterValue& v) { points.emplace_back(v.ts_ns, v.value); });
    out.push_back(downsample(t, points, options.max_points));
  }
  return out;
}

}  // namespace stepscope
