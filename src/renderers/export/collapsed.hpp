// Collapsed stacks, the text format of flamegraph.pl, inferno and py-spy.
//
// One line per distinct (thread, stack), frames from root to leaf joined by
// `;`, then a space and a count:
//
//   process PID "cmd";thread TID "name";frame;frame COUNT
//
// Frames are labelled as frame_label.hpp says. Within a label, `;`, `\`,
// control characters and invalid UTF-8 are written as \xNN (escape.hpp), so
// a line always splits back into exactly its frames; spaces are kept
// (parsers split the count off at the last space).
//
// The count is the number of samples for a sampled profile. A span profile
// has no samples: its count is the stack's self time in microseconds,
// rounded, and stacks that round to zero are left out.
//
// Lines are ordered by pid, then tid, then lexicographically (bytewise).
// Stacks of one thread whose labels coincide (native frames differing only
// in their file) share one line with the summed count.
#pragma once

#include <ostream>

#include "analyses/profile.hpp"
#include "run/run.hpp"

namespace stepscope {

void write_collapsed(const Run& run, const Profile& profile, std::ostream& out);

}  // namespace stepscope
