// A source of data that `record` runs beside the stack sampler: system
// counters (sysmon), in-process hooks, GPU activity. The recording loop owns
// the sources, polls each at its own interval on the run's clock, and
// commits what they added to the run file with everything else.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

class RecordingSource {
 public:
  virtual ~RecordingSource() = default;

  // "NAME=value" settings the launched command needs (none in attach mode).
  virtual std::vector<std::string> child_environment() { return {}; }

  // How often poll() wants to be called; the loop calls it at the first
  // sampling round at or after each deadline.
  virtual int64_t poll_interval_ns() const = 0;

  // Adds what the source gathered to `run`. `tree` lists the live processes
  // of the recorded tree. Must not throw for a process that vanished.
  virtual void poll(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) = 0;

  // Lines for the user at the end of the recording (why a source gathered
  // nothing, what it had to skip).
  virtual std::vector<std::string> notes() const { return {}; }

  // The recording ends: a last poll and any cleanup.
  virtual void finish(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) {
    poll(run, tree, now_ns);
  }
};

}  // namespace stepscope
