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

// The fields after "(comm) ", split on spaces: state is field 0 (the
// third field of the file), ppid field 1, starttime field 19, exit_code 49.
std::vector<std::string_view> fields_after_comm(const std::string& stat) {
  std::vector<std::string_view> fields;
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return fields;
  std::string_view rest = std::string_view(stat).substr(close + 1);
  while (!rest.empty()) {
    size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  return fields;
}

template <typename T>
bool parse_number(std::string_view text, T& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& stat) {
  std::vector<std::string_view> fields = fields_after_comm(stat);
  ProcStat out;
  if (fields.size() < 20 || fields[0].size() != 1) return std::nullopt;
  out.state = fields[0][0];
  if (!parse_number(fields[1], out.parent_pid) || !parse_number(fields[19], out.start_ticks)) {
    return std::nullopt;
  }
  // exit_code appeared in Linux 3.5; older kernels simply do not tell.
  if (fields.size() > 49 && !parse_number(fields[49], out.exit_code)) out.exit_code = -1;
  return out;
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  auto stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  return stat ? parse_proc_stat(*stat) : std::nullopt;
}

std::vector<ProcThread> read_proc_threads(pid_t pid) {
  std::vector<ProcThread> threads;
  for (int64_t tid : list_task_ids(pid)) {
    auto state = read_thread_state(pid, static_cast<pid_t>(tid));
    auto comm = read_proc_file(task_path(pid, tid, "comm"));
    if (!state || !comm) continue;  // exited while we looked
    if (!comm->empty() && comm->back() == '\n') comm->pop_back();
    threads.push_back({tid, std::move(*comm), *state});
  }
  return threads;
}

std::optional<char> read_thread_state(pid_t pid, pid_t tid) {
  // Only the state is needed, and it sits right after the command name.
  auto stat = read_proc_file(task_path(pid, tid, "stat"));
  size_t close = stat ? stat->rfind(')') : std::string::npos;
  if (close == std::string::npos || close + 2 >= stat->size()) return std::nullopt;
  return (*stat)[close + 2];
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

}  // namespace stepscope
