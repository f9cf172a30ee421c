// Per-process counters from /proc/PID: CPU time, memory, I/O, threads,
// context switches and how many threads wait on disk, and the rates derived
// from two readings of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/process/kept_file.hpp"
#include "collectors/process/thread_state_reader.hpp"
#include "util/unique_fd.hpp"

namespace stepscope {

// What /proc/PID/status says about memory, threads and context switches.
struct ProcessStatus {
  std::string name;
  uint64_t rss_bytes = 0;
  uint64_t peak_rss_bytes = 0;  // VmHWM, the high-water mark of the RSS
  uint32_t threads = 0;
  uint64_t voluntary_switches = 0;    // the thread blocked (I/O, a lock, sleep)
  uint64_t involuntary_switches = 0;  // the scheduler took the CPU away
  // Both are the main thread's only: see ThreadTotals for the process's.
};
// Nullopt without a Threads line (truncated text); kernel threads have no
// Vm lines, which read as 0.
std::optional<ProcessStatus> parse_process_status(std::string_view status);

// read_bytes / write_bytes of /proc/PID/io: bytes that went to or came from
// storage (not the page cache).
struct ProcessIo {
  uint64_t read_bytes = 0, write_bytes = 0;
};
std::optional<ProcessIo> parse_process_io(std::string_view io);

// What the threads of a process add up to. The switch counts of
// /proc/PID/status are the main thread's only, so they are summed over
// /proc/PID/task/TID/status, which also gives each thread's state.
struct ThreadTotals {
  uint32_t disk_wait = 0;  // threads in D (uninterruptible sleep, almost always I/O)
  uint64_t voluntary_switches = 0, involuntary_switches = 0;
};
// Adds one thread's status text; false (and nothing added) when truncated.
bool add_thread_status(std::string_view status, ThreadTotals& totals);

// One reading of one process.
struct ProcessCounters {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // with the pid, identifies the process across readings
  uint64_t cpu_ticks = 0;
  ProcessStatus status;
  std::optional<ProcessIo> io;  // absent when /proc/PID/io is not ours to read
  ThreadTotals thread_totals;  // switches of exited threads drop out of the sums
};

// Reads processes' counters through descriptors kept open from one reading
// to the next: /proc/PID/stat, status and io, the task directory and each
// thread's status. A process's files are dropped when its start time
// changes (the pid now names another process) or it is no longer asked for.
class ProcessCounterReader {
 public:
  ProcessCounterReader() = default;
  ~ProcessCounterReader();
  ProcessCounterReader(const ProcessCounterReader&) = delete;
  ProcessCounterReader& operator=(const ProcessCounterReader&) = delete;

  // Nullopt when the process is gone or a zombie. `unreadable` counts files
  // of a live process that could not be read (permissions, races).
  std::optional<ProcessCounters> read(pid_t pid, uint64_t& unreadable);

  // Closes the files of every process not in `pids`; the end of a poll.
  void keep_only(const std::vector<pid_t>& pids);

  // Threads whose two files stay open between polls, over all processes:
  // a job's threads can number thousands and descriptors are limited (1024
  // by default), so those past it are read through files opened and closed
  // each time, as before (their schedstat shortcut still holds).
  static constexpr size_t kMaxKeptThreads = 256;

 private:
  // A thread's status is formatted from some fifty lines; its schedstat is
  // three numbers. A thread's state and switch counts change only when it is
  // scheduled in or out, which moves the schedstat counters, so status is
  // read again only when they moved (most threads of a training process
  // sleep through most polls).
  struct ThreadFiles {
    KeptFile schedstat, status;
    std::optional<SchedCounters> before;  // read just before status was last read
    ThreadTotals last;                    // what that status said (one thread's share)
  };
  bool add_thread(pid_t pid, pid_t tid, ThreadFiles& files, ThreadTotals& totals);
  struct Files {
    explicit Files(pid_t process);
    Files(const Files&) = delete;
    Files& operator=(const Files&) = delete;
    pid_t pid;
    uint64_t start_ticks = 0;  // of the process the files below were opened for
    KeptFile stat, status, io;
    UniqueFd task_dir;
    std::map<pid_t, ThreadFiles> threads;
  };
  ThreadTotals read_thread_totals(Files& files);

  std::map<pid_t, std::unique_ptr<Files>> files_;
  std::vector<pid_t> tids_;  // reused
  size_t threads_this_poll_ = 0;
};

// A process's CPU use between two readings, in percent of one CPU: a process
// with two busy threads shows about 200.
double process_cpu_percent(uint64_t ticks_before, uint64_t ticks_after, double seconds,
                           long ticks_per_second);

}  // namespace stepscope
