// Scheduler states of sampled threads, read at every sample.
//
// Opening /proc/PID/task/TID/stat costs more than reading it, and the
// recorder reads it for every thread at every round, so descriptors are kept
// open and re-read with pread; a thread's descriptor is closed when the
// thread is gone (the read fails) or its process is forgotten.
//
// Even a kept stat file is formatted anew by the kernel at each read (some
// fifty fields). The much shorter schedstat (time on a CPU, time waiting for
// one, times scheduled in) is read first: a thread changes state only by
// being scheduled in or out, which moves those counters, so while they stand
// still its state is the one stat last showed. The one change this misses is
// a wakeup: a thread woken but not yet given a CPU still shows the sleep it
// was in (and its stack is still at the call that slept) until it first runs.
//
// A thread stat last showed running (R) is the other way round: a busy
// thread's counters move at every tick. For it /proc/PID/task/TID/syscall is
// read instead: the kernel writes "running" there exactly when the thread's
// state is TASK_RUNNING (what stat shows as R), and formats nothing else, so
// it costs a tenth of stat (0.4 µs against 5.9 for a thread on a CPU). Only
// once the thread stopped are the counters and stat read again. Where
// `syscall` cannot be read (it needs ptrace rights, as reading memory does),
// stat is read alone.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "collectors/process/proc_threads.hpp"
#include "util/unique_fd.hpp"

namespace stepscope {

// The three counters of /proc/PID/task/TID/schedstat.
struct SchedCounters {
  uint64_t on_cpu_ns = 0;
  uint64_t waiting_ns = 0;
  uint64_t scheduled = 0;
  bool operator==(const SchedCounters&) const = default;
};

// Nullopt unless `text` holds three numbers, the first (time on a CPU) not
// zero: a kernel without scheduler statistics shows "0 0 0".
std::optional<SchedCounters> parse_schedstat(std::string_view text);

// How many threads' descriptors a reader may keep open: a quarter of the
// process's descriptor limit (three files each), at least 16, at most 4096,
// so that a job with many threads cannot starve the recorder's other files.
size_t kept_threads_for_descriptor_limit();

class ThreadStateReader {
 public:
  explicit ThreadStateReader(size_t max_kept_threads = kept_threads_for_descriptor_limit())
      : max_kept_(max_kept_threads) {}
  ThreadStateReader(const ThreadStateReader&) = delete;
  ThreadStateReader& operator=(const ThreadStateReader&) = delete;

  // What one read found of a thread.
  struct Look {
    char state = kUnknownStateLetter;  // R, S, D, ...
    // Not scheduled in or out since the previous read of this thread, and
    // not running then (its counters stand still): it has run no
    // instruction in between, so its memory, its Python stack included, is
    // as it was at that read. False when the reader cannot tell.
    bool still = false;
  };

  // The thread's state, kUnknownStateLetter when no descriptor is left to
  // read it, or nullopt when it is gone.
  std::optional<Look> look(pid_t pid, int64_t tid);

  // Closes the descriptors of every thread of `pid`.
  void forget_process(pid_t pid);

  // How many reads took the state from stat (the others from schedstat alone).
  uint64_t stat_reads() const { return stat_reads_; }

 private:
  struct ThreadFiles {
    pid_t pid = 0;
    int64_t tid = 0;
    UniqueFd stat;
    UniqueFd syscall;     // opened when the thread is first seen running
    bool syscall_tried = false;
    UniqueFd schedstat;   // invalid when it cannot be opened: stat every time
    SchedCounters before; // read just before stat was last read (unless state is R)
    char state = 0;       // what that stat read said; 0: no shortcut
  };
  std::optional<Look> read_files(ThreadFiles& files);

  // Past it, a thread's files are opened, read and closed at each read.
  size_t max_kept_;
  std::map<std::pair<pid_t, int64_t>, ThreadFiles> files_;
  uint64_t stat_reads_ = 0;
};

}  // namespace stepscope
