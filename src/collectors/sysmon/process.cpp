#include "collectors/sysmon/process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "collectors/process/proc_dir_entries.hpp"
#include "collectors/process/proc_files.hpp"
#include "collectors/process/proc_text.hpp"
#include "collectors/process/proc_threads.hpp"

namespace stepscope {

namespace {

// utime and stime are fields 14 and 15 of the file, so 11 and 12 counted
// from the state letter right after the name.

std::optional<uint64_t> status_number(std::string_view status, std::string_view key) {
  std::string_view field = first_field(status_field(status, key));
  return field.empty() ? std::nullopt : parse_number<uint64_t>(field);
}

std::string proc_path(pid_t pid, const std::string& file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
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

ProcessCounterReader::Files::Files(pid_t process)
    : pid(process),
      stat(proc_path(process, "stat"), KeptFile::Shape::kWhole),
      status(proc_path(process, "status"), KeptFile::Shape::kWhole),
      io(proc_path(process, "io"), KeptFile::Shape::kWhole) {}

ProcessCounterReader::~ProcessCounterReader() = default;

std::optional<ProcessCounters> ProcessCounterReader::read(pid_t pid, uint64_t& unreadable) {
  std::unique_ptr<Files>& slot = files_[pid];
  const bool fresh = !slot;
  if (fresh) slot = std::make_unique<Files>(pid);
  auto stat_text = slot->stat.read();
  auto stat = stat_text ? parse_proc_stat(*stat_text) : std::nullopt;
  if (stat && fresh) {
    slot->start_ticks = stat->start_ticks;
  } else if (stat && stat->start_ticks != slot->start_ticks) {
    // Another process under this pid: what was kept open belongs to the one
    // before, so everything is opened afresh. (A kept descriptor of a reaped
    // process reads only errors, so this is a safety net.)
    slot = std::make_unique<Files>(pid);
    slot->start_ticks = stat->start_ticks;
    stat_text = slot->stat.read();
    stat = stat_text ? parse_proc_stat(*stat_text) : std::nullopt;
    if (stat && stat->start_ticks != slot->start_ticks) stat.reset();  // replaced again, meanwhile
  }
  if (!stat_text) {
    files_.erase(pid);
    return std::nullopt;  // gone: an exit, not a fault
  }
  auto status_text = stat ? slot->status.read() : std::nullopt;
  auto status = status_text ? parse_process_status(*status_text) : std::nullopt;
  if (!stat || !status) {
    if (read_proc_stat(pid)) ++unreadable;  // still there, so the read itself failed
    files_.erase(pid);
    return std::nullopt;
  }
  if (stat->state == 'Z' || stat->state == 'X') return std::nullopt;
  ProcessCounters c;
  c.pid = pid;
  c.start_ticks = stat->start_ticks;
  c.cpu_ticks = stat->cpu_ticks;
  c.status = std::move(*status);
  auto io_text = slot->io.read();
  c.io = io_text ? parse_process_io(*io_text) : std::nullopt;
  if (!c.io) ++unreadable;
  c.thread_totals = read_thread_totals(*slot);
  return c;
}

// The threads' status files, kept open per thread; a thread that ended takes
// its descriptor with it. A thread that exits while we look simply drops out.
ThreadTotals ProcessCounterReader::read_thread_totals(Files& files) {
  ThreadTotals totals;
  if (!files.task_dir.valid()) files.task_dir = UniqueFd::open_read_only(proc_path(files.pid, "task").c_str(), O_DIRECTORY);
  if (!files.task_dir.valid() || !read_numeric_entries(files.task_dir.get(), tids_)) return totals;
  std::erase_if(files.threads, [&](const auto& entry) {
    return std::find(tids_.begin(), tids_.end(), entry.first) == tids_.end();
  });
  for (pid_t tid : tids_) {
    auto [it, added] = files.threads.try_emplace(tid);
    if (!add_thread(files.pid, tid, it->second, totals)) {
      files.threads.erase(it);
    } else if (++threads_this_poll_ > kMaxKeptThreads) {
      it->second.schedstat.close();
      it->second.status.close();
    }
  }
  return totals;
}

// Adds one thread's share to `totals`; false when it could not be read (it
// exited while we looked, and simply drops out).
bool ProcessCounterReader::add_thread(pid_t pid, pid_t tid, ThreadFiles& files, ThreadTotals& totals) {
  if (files.status.path().empty()) {
    std::string task = proc_path(pid, "task/" + std::to_string(tid) + "/");
    files.schedstat = KeptFile(task + "schedstat", KeptFile::Shape::kWhole);
    files.status = KeptFile(task + "status", KeptFile::Shape::kWhole);
  }
  auto schedstat = files.schedstat.read();
  auto counters = schedstat ? parse_schedstat(*schedstat) : std::nullopt;
  if (!counters || counters != files.before) {
    auto status = files.status.read();
    ThreadTotals share;
    if (!status || !add_thread_status(*status, share)) return false;
    files.last = share;
    files.before = counters;  // without counters (no scheduler statistics): status every time
  }
  totals.disk_wait += files.last.disk_wait;
  totals.voluntary_switches += files.last.voluntary_switches;
  totals.involuntary_switches += files.last.involuntary_switches;
  return true;
}

void ProcessCounterReader::keep_only(const std::vector<pid_t>& pids) {
  threads_this_poll_ = 0;
  std::erase_if(files_, [&](const auto& entry) {
    return std::find(pids.begin(), pids.end(), entry.first) == pids.end();
  });
}

double process_cpu_percent(uint64_t ticks_before, uint64_t ticks_after, double seconds,
                           long ticks_per_second) {
  if (seconds <= 0 || ticks_per_second <= 0 || ticks_after < ticks_before) return 0;
  double cpu_seconds = static_cast<double>(ticks_after - ticks_before) / static_cast<double>(ticks_per_second);
  return 100.0 * cpu_seconds / seconds;
}

}  // namespace stepscope
