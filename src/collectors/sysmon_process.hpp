// Per-process counters from /proc/PID: CPU time, memory, I/O, threads,
// context switches and how many threads wait on disk, and the rates derived
// from two readings of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Nullopt when the process is gone or a zombie. `unreadable` counts files of
// a live process that could not be read (permissions, races).
std::optional<ProcessCounters> read_process_counters(pid_t pid, uint64_t& unreadable);

// A process's CPU use between two readings, in percent of one CPU: a process
// with two busy threads shows about 200.
double process_cpu_percent(uint64_t ticks_before, uint64_t ticks_after, double seconds,
                           long ticks_per_second);

}  // namespace stepscope
