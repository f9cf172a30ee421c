// The speedscope file format (https://www.speedscope.app/file-format-schema.json).
//
// One profile per thread, named `process PID "cmd" / thread TID "name"`,
// all sharing one frame list (frames named by frame_label.hpp, with file and
// line when known). The heaviest thread is the one shown first.
//
// * Sampled runs give "sampled" profiles in nanoseconds: the samples the
//   profile counts (`options`: busy threads' unless idle ones are asked for,
//   inside the window), in time order (so speedscope's time-order view is
//   right), each weighing one sampling period; consecutive samples of one
//   stack are one sample of their summed weight, which speedscope shows the
//   same. startValue is the thread's first sample relative to the run's first
//   sample, and endValue = startValue + the weights' sum: the format has no
//   per-sample time, so gaps between samples are not shown.
// * Runs with only spans give "evented" profiles: open and close events at
//   the host spans' times, relative to the earliest host span. A span that
//   outlives its parent stays nested under it, as in the stack profile, and
//   the parent closes when it does, so the events always nest.
#pragma once

#include <ostream>

#include "analyses/profile.hpp"
#include "run/run.hpp"

namespace stepscope {

void write_speedscope(const Run& run, const Profile& profile, const ProfileOptions& options, std::ostream& out);

}  // namespace stepscope
