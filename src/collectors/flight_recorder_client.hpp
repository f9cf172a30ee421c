// Asking a rank for its Flight Recorder while the rank is stuck. A process
// launched under `record` runs stepscope's hooks; once its process group
// exists, a thread of theirs answers on the socket `flight.PID` in the
// recorder's private folder (the folder of STEPSCOPE_CHANNEL in the
// process's environment). The same folder keeps the notes of ranks that
// have exited (python/stepscope/_flight.py).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "run/dump.hpp"

namespace stepscope {

// The recorder's folder of STEPSCOPE_CHANNEL's value `channel` in a
// process's environment; empty when the process was not launched under
// `record` (no channel).
std::string recorder_folder(const std::string& channel);

// The rank's Flight Recorder, or nothing with `problem` saying why (no
// hooks, no process group yet, no answer within a few seconds).
std::optional<FlightRecorder> ask_flight_recorder(pid_t pid, const std::string& folder, std::string& problem);

// The ranks whose exit notes are in `folder` and that are no longer running.
std::vector<ExitedRank> exited_ranks(const std::string& folder);

}  // namespace stepscope
