// Processes and threads as /proc describes them: names, command lines,
// parents and scheduler states. The sampler joins these with the Python
// stacks it reads (by native thread id) to tell running from idle threads.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct ProcThread {
  int64_t tid = 0;
  std::string name;  // /proc/PID/task/TID/comm, without the newline
  char state = '?';  // the state letter of /proc/PID/task/TID/stat: R, S, D, ...
};

// The threads of `pid` with their names and states; empty when the process
// is gone. Threads that exit while being listed are skipped.
std::vector<ProcThread> read_proc_threads(pid_t pid);

// The state letter of one thread, or nullopt when it is gone.
std::optional<char> read_thread_state(pid_t pid, pid_t tid);

// The state letter in the text of a stat file: the field after the command
// name, which is in parentheses and may itself contain ") ".
std::optional<char> state_in_stat(std::string_view stat);

// /proc/PID/task/TID/comm without its newline, or nullopt when gone.
std::optional<std::string> read_thread_name(pid_t pid, int64_t tid);

// Not a letter the kernel writes: the state of a thread that could not be read.
constexpr char kUnknownStateLetter = '?';

// The scheduler state letter as the Run records it: R running, D disk wait,
// kUnknownStateLetter unknown, every other (S sleeping, T stopped, ...) idle.
ThreadState thread_state_from_letter(char state);

// The command line with arguments joined by spaces, or the comm name in
// brackets for kernel threads and processes without one; nullopt when gone.
std::optional<std::string> read_command_line(pid_t pid);

// What /proc/PID/stat says about a process that the recorder needs.
struct ProcStat {
  char state = '?';
  pid_t parent_pid = 0;
  uint64_t cpu_ticks = 0;    // user + system time, in clock ticks
  uint64_t start_ticks = 0;  // since boot: with the pid, identifies a process
  // Where its stack begins: placed anew at each exec (address space layout
  // randomization), so it tells an exec even of the same program. 0 when
  // we may not see it.
  uint64_t start_stack = 0;
  // Where its program's text begins and ends: with start_stack, what tells
  // an exec without asking /proc/PID/exe. 0 when we may not see them.
  uint64_t start_code = 0, end_code = 0;
  int exit_code = -1;        // the raw wait status, valid once the state is Z
};

// Nullopt when the process is gone (or reaped).
std::optional<ProcStat> read_proc_stat(pid_t pid);

// Parses the text of a stat file. The command name in parentheses may itself
// contain spaces and parentheses, so fields are counted after the last ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view stat);

}  // namespace stepscope
