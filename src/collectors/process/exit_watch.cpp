#include "collectors/process/exit_watch.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "collectors/process/child_process.hpp"
#include "collectors/process/proc_threads.hpp"
#include "util/signal_free_thread.hpp"

namespace stepscope {

namespace {

// The wake-up word's key among the pids (no process has pid 0 here).
constexpr uint64_t kWakeKey = 0;

UniqueFd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
#else
  (void)pid;
  return UniqueFd();
#endif
}

bool add_to_epoll(int epoll, int fd, uint64_t key) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = key;
  return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0;
}

}  // namespace

ExitWatch::~ExitWatch() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    // The thread reads until it sees this; a failed write would leave it
    // asleep, and only a full counter fails, which one write cannot fill.
    (void)!::write(wake_.get(), &one, sizeof one);
    thread_.join();
  }
}

void ExitWatch::watch(pid_t pid, uint64_t start_ticks) {
  if (pid <= 0 || unavailable_ || (!thread_.joinable() && !start_thread())) return;
  UniqueFd pidfd = open_pidfd(pid);
  if (!pidfd.valid()) {
    if (errno == ENOSYS) unavailable_ = true;
    return;
  }
  std::lock_guard lock(mutex_);
  Watched& entry = watched_[pid];  // a pid reused: the earlier process's fd closes here
  entry = Watched{start_ticks, std::move(pidfd), std::nullopt};
  if (!add_to_epoll(epoll_.get(), entry.pidfd.get(), static_cast<uint64_t>(pid))) watched_.erase(pid);
}

std::optional<int> ExitWatch::take_exit_status(pid_t pid, uint64_t start_ticks) {
  std::lock_guard lock(mutex_);
  auto found = watched_.find(pid);
  if (found == watched_.end() || found->second.start_ticks != start_ticks || !found->second.exit_status) {
    return std::nullopt;
  }
  std::optional<int> status = found->second.exit_status;
  watched_.erase(found);
  return status;
}

bool ExitWatch::start_thread() {
  epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  wake_ = UniqueFd(eventfd(0, EFD_CLOEXEC));
  if (!epoll_.valid() || !wake_.valid() || !add_to_epoll(epoll_.get(), wake_.get(), kWakeKey)) {
    unavailable_ = true;
    return false;
  }
  try {
    thread_ = start_signal_free_thread([this] { wait_for_exits(); });
  } catch (const std::system_error&) {
    unavailable_ = true;
  }
  return !unavailable_;
}

void ExitWatch::wait_for_exits() {
  epoll_event events[16];
  for (;;) {
    int n = epoll_wait(epoll_.get(), events, 16, -1);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWakeKey) return;
      read_exit(static_cast<pid_t>(events[i].data.u64));
    }
  }
}

// A pidfd turns readable once its process is a zombie (or reaped): read the
// zombie's status before the parent reaps it, then stop watching.
void ExitWatch::read_exit(pid_t pid) {
  std::optional<ProcStat> stat = read_proc_stat(pid);
  std::lock_guard lock(mutex_);
  auto found = watched_.find(pid);
  if (found == watched_.end() || !found->second.pidfd.valid()) return;
  Watched& entry = found->second;
  const bool same_process = stat && stat->start_ticks == entry.start_ticks;
  if (same_process && stat->state != 'Z') return;  // the fd of an earlier process with this pid
  if (same_process && stat->exit_code >= 0) entry.exit_status = shell_exit_status(stat->exit_code);
  entry.pidfd.reset();  // closing it takes it out of the epoll set
}

}  // namespace stepscope
