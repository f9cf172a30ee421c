// The native half of `dump --native`: a perf event on each thread of a
// process for a moment, so that the threads on a CPU show their native
// frames merged with their Python ones. Threads that are not on a CPU give
// the kernel nothing to copy and keep their Python stacks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/native/native_unwinder.hpp"
#include "collectors/native/perf_stack_sampler.hpp"
#include "collectors/python/stack_reader.hpp"
#include "run/dump.hpp"

namespace stepscope {

class NativeSnapshot {
 public:
  // Opens an event on each of `tids` of `pid` and waits while they copy.
  // `indexes`: symbol indexes shared with the snapshots of other processes.
  NativeSnapshot(pid_t pid, const std::vector<int64_t>& tids, std::shared_ptr<SymbolIndexes> indexes);
  ~NativeSnapshot();

  // `python`'s frames merged with the newest native copy of its thread,
  // innermost first, into `out`; false, leaving `out` alone, when the
  // thread left no copy (it was not on a CPU).
  bool merged_frames(const PythonThreadStack& python, std::vector<SnapshotFrame>& out);

  // Why native frames are missing for some threads (the kernel's refusal),
  // or empty.
  const std::string& problem() const { return problem_; }

 private:
  std::unique_ptr<NativeUnwinder> unwinder_;
  std::map<int64_t, std::unique_ptr<PerfStackSampler>> threads_;
  std::string problem_;
};

}  // namespace stepscope
