// Processes and threads as /proc describes them: names, command lines,
// parents and scheduler states. The sampler joins these with the Python
// stacks it reads (by native thread id) to tell running from idle threads.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
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

// The scheduler state letter as the Run records it: R running, D disk wait,
// every other (S sleeping, T stopped, ...) idle.
ThreadState thread_state_from_letter(char state);

// The command line with arguments joined by spaces, or the comm name in
// brackets for kernel threads and processes without one; nullopt when gone.
std::optional<std::string> read_command_line(pid_t pid);

// The parent pid from /proc/PID/stat, or nullopt when gone.
std::optional<pid_t> read_parent_pid(pid_t pid);

// The state letter within the text of a /proc stat file. The command name
// in parentheses may itself contain spaces and parentheses, so the state is
// found after the last ')'.
std::optional<char> parse_stat_state(const std::string& stat);

}  // namespace stepscope
