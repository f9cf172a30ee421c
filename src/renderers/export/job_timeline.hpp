// The runs of a job on one Perfetto timeline (export --format perfetto
// RUN...; docs/jobs.md). Each node's recorder counts time on its own
// monotonic clock, and pids repeat across hosts: each run is moved to
// wall-clock time through the anchor its recorder wrote (start_unix_ns at
// start_clock_ns), its pids apart from the other runs', and its processes are
// named after their host and node, so that each host's processes sit together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "run/run.hpp"

namespace stepscope {

// Run i's pids become pid + (i + 1) x kJobPidStride: above any Linux pid (at
// most 2^22), below the lanes' tid stride.
inline constexpr int64_t kJobPidStride = 10'000'000;

// Moves run number `index` of a job onto the job's timeline. Returns a note
// when it could not be placed in time (a trace, or a run without the anchor:
// its own clock kept), else "".
std::string place_on_job_timeline(Run& run, size_t index);

}  // namespace stepscope
