#include "collectors/process/proc_threads.hpp"

#include <dirent.h>

#include <memory>

#include "collectors/process/proc_files.hpp"
#include "collectors/process/proc_text.hpp"

namespace stepscope {

namespace {

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

// The fields after "(comm) " of the first line: state is field 0 (the
// third field of the file), ppid 1, utime 11, stime 12, starttime 19,
// start_stack 25, exit_code 49. Returns how many, at most out.size().
size_t fields_after_comm(std::string_view stat, std::span<std::string_view> out) {
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return 0;
  std::string_view rest = stat.substr(close + 1);
  return split_fields(rest.substr(0, rest.find('\n')), out);
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view stat) {
  std::string_view field_array[50];  // up to exit_code
  std::span<const std::string_view> fields(field_array, fields_after_comm(stat, field_array));
  if (fields.size() < 20 || fields[0].size() != 1) return std::nullopt;
  auto parent = parse_number<pid_t>(fields[1]);
  auto utime = parse_number<uint64_t>(fields[11]);
  auto stime = parse_number<uint64_t>(fields[12]);
  auto start = parse_number<uint64_t>(fields[19]);
  if (!parent || !utime || !stime || !start) return std::nullopt;
  ProcStat out;
  out.state = fields[0][0];
  out.parent_pid = *parent;
  out.cpu_ticks = *utime + *stime;
  out.start_ticks = *start;
  if (fields.size() > 25) {
    out.start_code = parse_number<uint64_t>(fields[23]).value_or(0);
    out.end_code = parse_number<uint64_t>(fields[24]).value_or(0);
    out.start_stack = parse_number<uint64_t>(fields[25]).value_or(0);
  }
  // exit_code appeared in Linux 3.5; older kernels simply do not tell.
  if (fields.size() > 49) out.exit_code = parse_number<int>(fields[49]).value_or(-1);
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
    auto name = read_thread_name(pid, tid);
    if (!state || !name) continue;  // exited while we looked
    threads.push_back({tid, std::move(*name), *state});
  }
  return threads;
}

std::optional<char> state_in_stat(std::string_view stat) {
  // Only the state is needed, and it sits right after the command name.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || close + 2 >= stat.size()) return std::nullopt;
  return stat[close + 2];
}

std::optional<char> read_thread_state(pid_t pid, pid_t tid) {
  auto stat = read_proc_file(task_path(pid, tid, "stat"));
  return stat ? state_in_stat(*stat) : std::nullopt;
}

std::optional<std::string> read_thread_name(pid_t pid, int64_t tid) {
  auto comm = read_proc_file(task_path(pid, tid, "comm"));
  if (comm && !comm->empty() && comm->back() == '\n') comm->pop_back();
  return comm;
}

ThreadState thread_state_from_letter(char state) {
  switch (state) {
    case 'R':
      return ThreadState::kRunning;
    case 'D':
      return ThreadState::kDiskWait;
    case kUnknownStateLetter:
      return ThreadState::kUnknown;
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
