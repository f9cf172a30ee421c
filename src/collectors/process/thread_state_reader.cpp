#include "collectors/process/thread_state_reader.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string>

#include "collectors/process/proc_files.hpp"
#include "collectors/process/proc_threads.hpp"

namespace stepscope {

namespace {

UniqueFd open_task_file(pid_t pid, int64_t tid, const char* name) {
  return UniqueFd::open_read_only(task_path(pid, tid, name).c_str());
}

// A stat line fits in 512 bytes up to the state however long the name
// (the kernel caps it at 64).
std::optional<char> read_state(const UniqueFd& fd) {
  char buffer[512];
  ssize_t n = ::pread(fd.get(), buffer, sizeof buffer, 0);
  if (n <= 0) return std::nullopt;
  return state_in_stat(std::string_view(buffer, static_cast<size_t>(n)));
}

// Whether /proc/PID/task/TID/syscall says "running": the kernel writes
// that exactly when the thread's state is TASK_RUNNING (on a CPU or waiting
// for one), which stat shows as R; for any other state it writes the system
// call the thread is blocked in. nullopt when it cannot be read.
std::optional<bool> read_running(const UniqueFd& fd) {
  if (!fd.valid()) return std::nullopt;
  char buffer[96];
  ssize_t n = ::pread(fd.get(), buffer, sizeof buffer, 0);
  if (n <= 0) return std::nullopt;
  return std::string_view(buffer, static_cast<size_t>(n)).starts_with("running");
}

std::optional<SchedCounters> read_counters(const UniqueFd& fd) {
  if (!fd.valid()) return std::nullopt;
  char buffer[96];  // three 20-digit numbers at most
  ssize_t n = ::pread(fd.get(), buffer, sizeof buffer, 0);
  if (n <= 0) return std::nullopt;
  return parse_schedstat(std::string_view(buffer, static_cast<size_t>(n)));
}

}  // namespace

std::optional<SchedCounters> parse_schedstat(std::string_view text) {
  SchedCounters c;
  const char* p = text.data();
  const char* end = p + text.size();
  for (uint64_t* field : {&c.on_cpu_ns, &c.waiting_ns, &c.scheduled}) {
    while (p < end && *p == ' ') ++p;
    auto [next, ec] = std::from_chars(p, end, *field);
    if (ec != std::errc()) return std::nullopt;
    p = next;
  }
  if (c.on_cpu_ns == 0) return std::nullopt;
  return c;
}

size_t kept_threads_for_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / 4 / 3, 16, 4096);
}

std::optional<ThreadStateReader::Look> ThreadStateReader::read_files(ThreadFiles& files) {
  if (files.state == 'R') {
    // Last seen running: a busy thread's counters move at every tick, so
    // they would only add a read before stat, whose fifty fields cost ten
    // times the few bytes of `syscall`, which tells running apart as well.
    if (!files.syscall.valid() && !files.syscall_tried) {
      files.syscall_tried = true;
      files.syscall = open_task_file(files.pid, files.tid, "syscall");
    }
    if (auto running = read_running(files.syscall)) {
      if (*running) return Look{'R'};
    } else {
      ++stat_reads_;
      auto state = read_state(files.stat);
      if (!state) return std::nullopt;
      if (*state == 'R') return Look{'R'};
    }
    // It stopped running: the counters, then stat, as for any thread.
  }
  auto counters = read_counters(files.schedstat);
  // Counters only grow: equal to those read before the last stat, they
  // were equal at every read since, the previous one included.
  if (counters && files.state != 0 && files.state != 'R' && *counters == files.before) {
    return Look{files.state, true};
  }
  // The counters are read before stat, so that while they stand still
  // nothing can have changed since stat was read.
  ++stat_reads_;
  auto state = read_state(files.stat);
  files.before = counters.value_or(SchedCounters{});
  // Without counters (none yet for a thread that has not been charged a
  // tick, none at all on a kernel without scheduler statistics), the
  // shortcut for a standing thread is off; the one for a running thread
  // needs none.
  files.state = state && (counters || *state == 'R') ? *state : 0;
  if (!state) return std::nullopt;
  return Look{*state};
}

std::optional<ThreadStateReader::Look> ThreadStateReader::look(pid_t pid, int64_t tid) {
  auto key = std::make_pair(pid, tid);
  auto found = files_.find(key);
  if (found == files_.end()) {
    ThreadFiles files;
    files.pid = pid;
    files.tid = tid;
    files.stat = open_task_file(pid, tid, "stat");
    if (!files.stat.valid()) {
      // There, but no descriptor left to read it.
      if (errno == EMFILE || errno == ENFILE) return Look{kUnknownStateLetter};
      return std::nullopt;
    }
    files.schedstat = open_task_file(pid, tid, "schedstat");
    if (files_.size() >= max_kept_) return read_files(files);  // closed on return
    found = files_.emplace(key, std::move(files)).first;
  }
  auto look = read_files(found->second);
  if (!look) files_.erase(found);  // the thread exited: its descriptors now only read errors
  return look;
}

void ThreadStateReader::forget_process(pid_t pid) {
  auto it = files_.lower_bound({pid, INT64_MIN});
  while (it != files_.end() && it->first.first == pid) it = files_.erase(it);
}

}  // namespace stepscope
