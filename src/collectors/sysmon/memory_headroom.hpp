// How much more memory this process can take before the system refuses it or
// kills it. A command that reads a run into memory weighs the run's rows
// against it first (cli/input.cpp), so that a day-long recording too large to
// hold is refused with a window that fits, not ended by std::bad_alloc or by
// the OOM killer minutes into the reading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stepscope {

// What each bound allows and what is used of it, where it can be read.
struct MemoryBounds {
  std::optional<uint64_t> available;  // the machine's MemAvailable
  // A memory cgroup's limit (a container, a Kubernetes pod, a batch job) and
  // what cannot be reclaimed of its usage (its working set).
  std::optional<uint64_t> cgroup_limit, cgroup_working_set;
  // `ulimit -d` (RLIMIT_DATA) against VmData: the private writable memory
  // the process has mapped, which that limit counts. (`ulimit -v`, the
  // address space, is left out: each thread takes 64 MiB of it for a malloc
  // arena that glibc does without when refused, so what a command will need
  // of it is no fixed share of its rows. A command that runs out of it says
  // so: cli/main.cpp.)
  std::optional<uint64_t> data_limit, data_used;
  // That limit counts each thread's stack too (8 MiB): what the threads to
  // come will take is set aside, up to half of what the limit leaves.
  uint64_t data_for_threads = 0;
};

struct MemoryHeadroom {
  uint64_t bytes = 0;
  std::string bound;  // what sets it, for a message: "the machine's available memory"...
};

// The least that any bound leaves; nullopt when none is known. A limit
// already exceeded leaves nothing.
std::optional<MemoryHeadroom> least_headroom(const MemoryBounds& bounds);

// This process's bounds, read now from /proc, its cgroup and its resource
// limits.
MemoryBounds read_memory_bounds();

}  // namespace stepscope
