#include "collectors/sysmon_process.hpp"

#include <algorithm>

#include "collectors/proc_files.hpp"
#include "collectors/proc_text.hpp"
#include "collectors/proc_threads.hpp"
#include "collectors/process_tree.hpp"

namespace stepscope {

namespace {

// utime and stime are fields 14 and 15 of the file, so 11 and 12 counted
// from the state letter right after the name.

std::optional<uint64_t> status_number(std::string_view status, std::string_view key) {
  std::vector<std::string_view> fields = split_fields(status_field(status, key));
  return fields.empty() ? std::nullopt : parse_number<uint64_t>(fields[0]);
}

std::string proc_path(pid_t pid, const char* file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
}

ThreadTotals read_thread_totals(pid_t pid) {
  ThreadTotals totals;
  std::string task = proc_path(pid, "task/");
  for (pid_t tid : thread_ids(pid)) {
    // A thread that exits while we look simply drops out.
    if (auto status = read_proc_file(task + std::to_string(tid) + "/status")) add_thread_status(*status, totals);
  }
  return totals;
}

}  // namespace

std::optional<ProcessStatus> parse_process_status(std::string_view status) {
  auto threads = status_number(status, "Threads");
  if (!threads) return std::nullopt;
  ProcessStatus s;
  s.name = std::string(status_field(status, "Name"));
  s.threads = static_cast<uint32_t>(std::min<uint64_t>(*threads, UINT32_MAX));
  s.rss_bytes = status_number(status, "VmRSS").value_or(0) * 1024;
  s.peak_rss_bytes = std::max(s.rss_bytes, status_number(status, "VmHWM").value_or(0) * 1024);
  s.voluntary_switches = status_number(status, "voluntary_ctxt_switches").value_or(0);
  s.involuntary_switches = status_number(status, "nonvoluntary_ctxt_switches").value_or(0);
  return s;
}

std::optional<ProcessIo> parse_process_io(std::string_view io) {
  auto read = status_number(io, "read_bytes");
  auto write = status_number(io, "write_bytes");
  if (!read || !write) return std::nullopt;
  return ProcessIo{*read, *write};
}

bool add_thread_status(std::string_view status, ThreadTotals& totals) {
  std::string_view state = status_field(status, "State");
  auto voluntary = status_number(status, "voluntary_ctxt_switches");
  auto involuntary = status_number(status, "nonvoluntary_ctxt_switches");
  if (state.empty() || !voluntary || !involuntary) return false;
  if (state.front() == 'D') ++totals.disk_wait;
  totals.voluntary_switches += *voluntary;
  totals.involuntary_switches += *involuntary;
  return true;
}

std::optional<ProcessCounters> read_process_counters(pid_t pid, uint64_t& unreadable) {
  auto stat_text = read_proc_file(proc_path(pid, "stat"));
  if (!stat_text) return std::nullopt;  // gone: an exit, not a fault
  auto stat = parse_proc_stat(*stat_text);
  auto status_text = read_proc_file(proc_path(pid, "status"));
  auto status = status_text ? parse_process_status(*status_text) : std::nullopt;
  if (!stat || !status) {
    if (read_proc_stat(pid)) ++unreadable;  // still there, so the read itself failed
    return std::nullopt;
  }
  if (stat->state == 'Z' || stat->state == 'X') return std::nullopt;
  ProcessCounters c;
  c.pid = pid;
  c.start_ticks = stat->start_ticks;
  c.cpu_ticks = stat->cpu_ticks;
  c.status = std::move(*status);
  auto io_text = read_proc_file(proc_path(pid, "io"));
  c.io = io_text ? parse_process_io(*io_text) : std::nullopt;
  if (!c.io) ++unreadable;
  c.thread_totals = read_thread_totals(pid);
  return c;
}

double process_cpu_percent(uint64_t ticks_before, uint64_t ticks_after, double seconds,
                           long ticks_per_second) {
  if (seconds <= 0 || ticks_per_second <= 0 || ticks_after < ticks_before) return 0;
  double cpu_seconds = static_cast<double>(ticks_after - ticks_before) / static_cast<double>(ticks_per_second);
  return 100.0 * cpu_seconds / seconds;
}

}  // namespace stepscope
