// The exit statuses of processes the recorder did not start.
//
// Only a zombie's /proc/PID/stat holds its wait status, and a parent that
// polls its children (torchrun's agent every 0.1 s, multiprocessing's
// Popen.poll) reaps them within tens of milliseconds: the sampler's own stat
// reads, every scan at best, saw the zombie only some of the time. This
// watch holds a pidfd per process (Linux 5.3+, no privilege needed; it
// becomes readable the moment the process turns zombie) and a thread that
// sleeps on all of them at once and reads the zombie's stat as soon as one
// wakes it. The sampling loop pays nothing for it: its own sleep stays one
// epoll_wait per round (RoundTimer).
//
// A parent that is already blocked in wait() still reaps before the watch
// can read: that status stays unknown, as before.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "util/unique_fd.hpp"

namespace stepscope {

class ExitWatch {
 public:
  ExitWatch() = default;
  ~ExitWatch();
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;

  // Watches the process `pid` that started at `start_ticks` (since boot, as
  // its stat says). Does nothing where pidfds are not available or the
  // process is already gone.
  void watch(pid_t pid, uint64_t start_ticks);

  // The exit status (as a shell reports it) of the watched process `pid`
  // that started at `start_ticks`, once its zombie was read: handed out
  // once. Nullopt while it was not. (A process that was reaped unseen has
  // its fd closed all the same; what stays is a few bytes until the watch
  // ends.)
  std::optional<int> take_exit_status(pid_t pid, uint64_t start_ticks);

 private:
  struct Watched {
    uint64_t start_ticks = 0;
    UniqueFd pidfd;
    std::optional<int> exit_status;  // once its zombie was read
  };

  bool start_thread();
  void wait_for_exits();
  void read_exit(pid_t pid);

  std::mutex mutex_;  // guards watched_; the fds below are set before the thread starts
  std::map<pid_t, Watched> watched_;
  UniqueFd epoll_;
  UniqueFd wake_;  // an eventfd: the destructor's word to the thread
  std::thread thread_;
  bool unavailable_ = false;  // no pidfds, epoll or thread here: watch nothing
};

}  // namespace stepscope
