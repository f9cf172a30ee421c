#include "run/run_window.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "run/trimmed_run.hpp"

namespace stepscope {

namespace {

bool inside(int64_t ts, TimeRange window) { return ts >= window.from_ns && ts < window.to_ns; }

// Drops the elements `keep` refuses; returns, per old index, the new one (or kDropped).
constexpr uint32_t kDropped = std::numeric_limits<uint32_t>::max();
template <typename T, typename Keep>
std::vector<uint32_t> filter(std::vector<T>& items, Keep keep) {
  std::vector<uint32_t> new_index(items.size(), kDropped);
  size_t kept = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!keep(items[i])) continue;
    new_index[i] = static_cast<uint32_t>(kept);
    if (kept != i) items[kept] = std::move(items[i]);
    ++kept;
  }
  items.resize(kept);
  return new_index;
}

}  // namespace

std::optional<TimeRange> run_extent(const Run& run) {
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  auto see = [&](int64_t from, int64_t to) {
    first = std::min(first, from);
    last = std::max(last, to);
  };
  for (const Sample& s : run.samples) see(s.ts_ns, s.ts_ns);
  for (const Span& s : run.spans) see(s.start_ns, s.end_ns);
  for (const CounterValue& v : run.counter_values) see(v.ts_ns, v.ts_ns);
  if (first > last) return std::nullopt;
  // A trimmed run (record --max-size) starts where its kept data does, not
  // where the recording did.
  if (auto trimmed_before = run.metadata_int(trim_keys::kTrimmedBeforeNs)) {
    first = *trimmed_before;
  } else if (auto start = run.metadata_int("start_clock_ns"); start && *start < first) {
    first = *start;
  }
  return TimeRange{first, last};
}

void keep_window(Run& run, TimeRange window) {
  filter(run.samples, [&](const Sample& s) { return inside(s.ts_ns, window); });
  // A step's counters (its samples, its memory peak) are stamped with its end,
  // which is the window's end for the last step a window of steps holds.
  filter(run.counter_values,
         [&](const CounterValue& v) { return inside(v.ts_ns, window) || v.ts_ns == window.to_ns; });
  std::vector<uint32_t> span_index = filter(run.spans, [&](const Span& s) { return inside(s.start_ns, window); });
  filter(run.flows, [&](Flow& f) {
    if (f.from >= span_index.size() || f.to >= span_index.size()) return false;
    if (span_index[f.from] == kDropped || span_index[f.to] == kDropped) return false;
    f.from = span_index[f.from];
    f.to = span_index[f.to];
    return true;
  });
}

}  // namespace stepscope
