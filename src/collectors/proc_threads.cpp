#include "collectors/proc_threads.hpp"

#include <dirent.h>

#include <charconv>
#include <memory>

#include "collectors/proc_files.hpp"

namespace stepscope {

namespace {

std::string task_path(pid_t pid, int64_t tid, const char* file) {
  return "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + file;
}

std::vector<int64_t> list_task_ids(pid_t pid) {
  std::vector<int64_t> tids;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> handle(opendir(dir.c_str()), closedir);
  if (!handle) return tids;
  while (const dirent* entry = readdir(handle.get())) {
    int64_t tid = 0;
    std::string_view name = entry->d_name;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (ec == std::errc() && end == name.data() + name.size()) tids.push_back(tid);
  }
  return tids;
}

// The fields after "(comm) " of a stat file: state is field 0, ppid field 1.
std::optional<std::string_view> fields_after_comm(const std::string& stat) {
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return std::nullopt;
  return std::string_view(stat).substr(close + 2);
}

}  // namespace

std::optional<char> parse_stat_state(const std::string& stat) {
  auto fields = fields_after_comm(stat);
  if (!fields || fields->empty()) return std::nullopt;
  return fields->front();
}

std::vector<ProcThread> read_proc_threads(pid_t pid) {
  std::vector<ProcThread> threads;
  for (int64_t tid : list_task_ids(pid)) {
    auto stat = read_proc_file(task_path(pid, tid, "stat"));
    auto comm = read_proc_file(task_path(pid, tid, "comm"));
    auto state = stat ? parse_stat_state(*stat) : std::nullopt;
    if (!state || !comm) continue;  // exited while we looked
    if (!comm->empty() && comm->back() == '\n') comm->pop_back();
    threads.push_back({tid, std::move(*comm), *state});
  }
  return threads;
}

std::optional<char> read_thread_state(pid_t pid, pid_t tid) {
  auto stat = read_proc_file(task_path(pid, tid, "stat"));
  return stat ? parse_stat_state(*stat) : std::nullopt;
}

ThreadState thread_state_from_letter(char state) {
  switch (state) {
    case 'R':
      return ThreadState::kRunning;
    case 'D':
      return ThreadState::kDiskWait;
    default:
      return ThreadState::kIdle;
  }
}

std::optional<std::string> read_command_line(pid_t pid) {
  std::string base = "/proc/" + std::to_string(pid);
  auto cmdline = read_proc_file(base + "/cmdline");
  if (!cmdline) return std::nullopt;
  while (!cmdline->empty() && cmdline->back() == '\0') cmdline->pop_back();
  if (!cmdline->empty()) {
    for (char& c : *cmdline) c = c == '\0' ? ' ' : c;
    return cmdline;
  }
  auto comm = read_proc_file(base + "/comm");
  if (!comm) return std::nullopt;
  if (!comm->empty() && comm->back() == '\n') comm->pop_back();
  return "[" + *comm + "]";
}

std::optional<pid_t> read_parent_pid(pid_t pid) {
  auto stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  auto fields = stat ? fields_after_comm(*stat) : std::nullopt;
  if (!fields || fields->size() < 3) return std::nullopt;
  std::string_view rest = fields->substr(2);  // skip "S "
  pid_t ppid = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), ppid);
  if (ec != std::errc()) return std::nullopt;
  return ppid;
}

}  // namespace stepscope
