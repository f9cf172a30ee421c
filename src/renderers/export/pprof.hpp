// pprof's profile format: a gzipped profile.proto message, what `go tool
// pprof`, Grafana Pyroscope, Parca and OpenTelemetry's profiles signal read.
//
// * Two sample types: "samples" (count) and "wall" (nanoseconds: a sample
//   weighs one sampling period; a trace's span stack, its self time). The
//   period is the sampling period ("wall", nanoseconds).
// * One location per frame (function, file, line), with one function per
//   name and file; a sample lists its frames leaf first.
// * Labels on every sample: `pid` and `tid` (numbers), `process` and `thread`
//   (the names the collapsed export gives them), `rank` when the process
//   reported one, and `phase` for a sample of a step thread inside a step
//   (data_wait, forward, backward, optimizer, other). Samples that differ only
//   in their labels stay apart.
// * time_nanos is the recording's start (wall clock), duration_nanos the
//   time from the first sample (or span) to the last.
//
// Strings from the trace or the program are written as valid UTF-8 (what
// protobuf's string fields require): other bytes and control characters are
// escaped as \xNN, as in the other exports.
#pragma once

#include <ostream>

#include "analyses/profile.hpp"
#include "run/run.hpp"

namespace stepscope {

void write_pprof(const Run& run, const Profile& profile, const ProfileOptions& options, std::ostream& out);

}  // namespace stepscope
