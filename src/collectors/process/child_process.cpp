#include "collectors/process/child_process.hpp"

#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "util/error.hpp"

extern char** environ;

namespace stepscope {

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Passes on to `child` a stop signal another process sent us (kill, a job
// scheduler); a terminal's Ctrl-C reached the child already through its
// process group.
void forward(const siginfo_t& info, pid_t child) {
  bool sent_by_a_process = info.si_code == SI_USER || info.si_code == SI_QUEUE;
  if (child > 0 && sent_by_a_process) kill(child, info.si_signo);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string_view variable_name(std::string_view setting) {
  return setting.substr(0, setting.find('='));
}

// This process's environment with `extra` applied: an extra setting replaces
// an inherited one of the same name (a child taking the first of two would
// silently ignore ours).
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view name = variable_name(*e);
    bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& setting) {
      return variable_name(setting) == name;
    });
    if (!replaced) env.emplace_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

int shell_exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& extra_env) {
  if (argv.empty()) throw InputError("no command to record");
  std::vector<std::string> args = argv;
  std::vector<std::string> env = merged_environment(extra_env);
  std::vector<char*> c_args = c_strings(args), c_env = c_strings(env);

  // The child must not inherit the recorder's blocked SIGINT/SIGTERM.
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  sigdelset(&mask, SIGINT);
  sigdelset(&mask, SIGTERM);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  int rc = posix_spawnp(&pid_, c_args[0], nullptr, &attr, c_args.data(), c_env.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw InputError(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }
}

ChildProcess::~ChildProcess() {
  // A recorder that fails mid-way must not leave the program running unseen.
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGTERM);
    wait();
  }
}

std::optional<int> ChildProcess::poll() {
  if (status_) return status_;
  int wait_status = 0;
  pid_t rc = waitpid(pid_, &wait_status, WNOHANG);
  if (rc == pid_) status_ = shell_exit_status(wait_status);
  return status_;
}

int ChildProcess::wait() {
  while (!status_) {
    int wait_status = 0;
    pid_t rc = waitpid(pid_, &wait_status, 0);
    if (rc == pid_) status_ = shell_exit_status(wait_status);
    if (rc < 0 && errno != EINTR) status_ = 1;
  }
  return *status_;
}

SignalRelay::SignalRelay()
    : stops_(stop_signals()),
      signals_(signalfd(-1, &stops_, SFD_CLOEXEC | SFD_NONBLOCK)),
      timer_(signals_.get()) {
  if (!signals_.valid()) throw std::system_error(errno, std::generic_category(), "signalfd");
  pthread_sigmask(SIG_BLOCK, &stops_, &previous_mask_);
}

SignalRelay::~SignalRelay() { pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr); }

void SignalRelay::wait_until(int64_t deadline_ns, int64_t following_ns) {
  // A signal's arrival (or EINTR) ends the wait early; the caller polls and
  // schedules again either way.
  pending_ = timer_.wait_until(deadline_ns, following_ns) != RoundTimer::Woken::kDeadline;
}

SignalRelay::Received SignalRelay::poll(pid_t child) {
  Received received;
  if (!pending_) return received;
  pending_ = false;
  const timespec no_wait{0, 0};
  siginfo_t info;
  while (sigtimedwait(&stops_, &info, &no_wait) > 0) {
    received.stop = true;
    forward(info, child);
  }
  return received;
}

}  // namespace stepscope
