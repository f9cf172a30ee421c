// A window of a run: the part between two moments, as if only that had been
// recorded (report, export and compare --window; docs/report.md, "Windows").
#pragma once

#include <cstdint>
#include <optional>

#include "run/run.hpp"

namespace stepscope {

// [from_ns, to_ns) on the run's own clock.
struct TimeRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// From the first to the last moment of anything the run holds (samples,
// spans, counter values); a recording starts at its start (metadata
// start_clock_ns) even before its first sample, and a trimmed one where its
// kept data starts (trimmed_before_ns). Nullopt for an empty run.
std::optional<TimeRange> run_extent(const Run& run);

// Keeps the samples taken in `window`, the counter values taken in it or at
// its end, the spans that start in it, the flows between kept spans, and
// everything else as it was.
void keep_window(Run& run, TimeRange window);

}  // namespace stepscope
