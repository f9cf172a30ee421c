// Whether a process tree can have gained a process since it was last walked,
// from one short read of /proc/loadavg, so that the recorder walks the tree
// (a read of every thread's /proc/PID/task/TID/children) only when it may
// have changed.
//
// The last two fields of /proc/loadavg are "running/tasks last_pid": the
// number of tasks on the machine and the pid most recently allocated in the
// reader's pid namespace. Every new process and every new thread takes a
// pid; one in a nested pid namespace (a container started by the job) takes
// one in every ancestor namespace too, ours included. So a fork anywhere
// under the recorded root moves last_pid. It wraps at pid_max, back to 300:
// to come back to the same value between two reads 50 ms apart, the machine
// would have to allocate a whole cycle of pids (32768 at the least) in that
// time, and both counters would have to land where they were.
//
// The one gap is a fork in flight: the kernel allocates the pid before it
// links the child to its parent (and counts it in `tasks`), so a walk just
// after the read can miss a child whose pid the read already showed. Hence
// the tree is walked at the read that saw the change and at the next one
// too (50 ms later), the link also moves `tasks` (unless a task elsewhere
// was reaped in the same instant), and whatever the file says the tree is
// walked at least once every `max_skipped + 1` reads (once a second).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "collectors/process/kept_file.hpp"

namespace stepscope {

struct PidCounters {
  uint64_t tasks = 0;  // threads and processes on the machine
  pid_t last_pid = 0;  // the pid most recently allocated in our pid namespace
  bool operator==(const PidCounters&) const = default;
};

// The counters of /proc/loadavg's text ("0.50 0.40 0.30 2/149 9224");
// nullopt when it does not end with "N/TASKS LAST_PID".
std::optional<PidCounters> parse_loadavg_pids(std::string_view text);

class ForkGate {
 public:
  explicit ForkGate(int max_skipped = 19, std::string path = "/proc/loadavg")
      : max_skipped_(max_skipped), loadavg_(std::move(path), KeptFile::Shape::kWhole) {}

  // Reads the counters now: true when the tree must be walked (right after
  // this call, so that a fork after the read moves them for the next one).
  bool must_walk();

  // The decision for counters just read (nullopt: unreadable, so walk).
  bool must_walk(const std::optional<PidCounters>& now);

  // Reads that answered "no walk" so far, for the benchmarks and tests.
  uint64_t skipped() const { return skipped_total_; }

 private:
  int max_skipped_;
  KeptFile loadavg_;
  std::optional<PidCounters> last_;
  int steady_reads_ = 0;  // reads in a row that found `last_` again
  int skipped_in_a_row_ = 0;
  uint64_t skipped_total_ = 0;
};

}  // namespace stepscope
