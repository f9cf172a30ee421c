// Launching the command that `record` profiles.
//
// The child keeps the recorder's standard input, output and error, so the
// program behaves as it does without stepscope; SIGINT and SIGTERM sent to
// the recorder are forwarded to it, and the recording ends when it does.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "collectors/round_timer.hpp"
#include "util/unique_fd.hpp"

namespace stepscope {

class ChildProcess {
 public:
  // Starts `argv` (searched on PATH) with `extra_env` ("NAME=value") added to
  // the environment, with the signal mask this process had before any
  // SignalRelay. Throws InputError when the command cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Reaps the child if it has exited, without blocking. Returns its exit
  // status as a shell reports it (128 + signal when killed) once it has.
  std::optional<int> poll();
  // Blocks until the child exits; returns its status as poll() does.
  int wait();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Takes SIGINT and SIGTERM away from their default action for as long as it
// lives, so the recorder can finish its file; the sampling loop asks it what
// arrived. Signals are blocked, watched through a signalfd and taken with
// sigtimedwait, which needs no handler and no global state. Children started
// while it lives get the original signal mask back.
class SignalRelay {
 public:
  SignalRelay();
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  struct Received {
    bool stop = false;  // SIGINT or SIGTERM arrived
  };
  // Drains what arrived without blocking. With `child` > 0, forwards to it
  // the signals another process sent us (kill, a job scheduler); a terminal's
  // Ctrl-C reached the child already through its process group.
  Received poll(pid_t child);

  // Sleeps until `deadline_ns` on CLOCK_MONOTONIC, or until a signal
  // arrives, whichever is first: one wait does both the sampling loop's sleep
  // and its watch for Ctrl-C. `following_ns` is the deadline of the round
  // after, whose timer is set now (see RoundTimer for why that is cheaper).
  void wait_until(int64_t deadline_ns, int64_t following_ns);

 private:
  sigset_t stops_{};
  sigset_t previous_mask_{};
  UniqueFd signals_;  // readable while a stop signal is pending
  RoundTimer timer_;
  // Whether the last wait was cut short: the loop's poll() then looks for
  // signals, and otherwise skips a system call that would find none.
  bool pending_ = true;
};

// Converts a waitpid status to the shell's convention.
int shell_exit_status(int wait_status);

}  // namespace stepscope
