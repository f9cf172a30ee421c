// stepscope monitor [--pid PID] [--interval S] [--count N] [--format table|csv|jsonl]:
// system, process-tree and GPU counters every interval, like nvidia-smi, top
// and iostat in one.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "collectors/process/proc_threads.hpp"
#include "collectors/recorder.hpp"
#include "collectors/sysmon/sysmon.hpp"
#include "renderers/monitor/csv.hpp"
#include "renderers/monitor/jsonl.hpp"
#include "renderers/monitor/table.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

struct MonitorOptions {
  pid_t pid = 0;
  double interval_s = 1;
  int64_t count = 0;  // 0: until Ctrl-C (or until the --pid tree is gone)
  std::string format = "table";
  bool verbose = false;
};

using Renderer = std::function<std::string(const SysmonSample&)>;

Renderer make_renderer(const MonitorOptions& options, const Sysmon& sysmon) {
  if (options.format == "csv") {
    auto csv = std::make_shared<MonitorCsv>(options.pid > 0);
    return [csv](const SysmonSample& s) { return csv->rows(s); };
  }
  if (options.format == "jsonl") return monitor_jsonl_line;
  MonitorTableOptions table{isatty(STDOUT_FILENO) == 1, options.verbose, sysmon.gpu_absent_reason()};
  return [table, &sysmon](const SysmonSample& s) {
    MonitorTableOptions now = table;
    now.gpu_absent_reason = sysmon.gpu_absent_reason();  // NVML may fail mid-run
    return monitor_table(s, now);
  };
}

void check_options(const MonitorOptions& options) {
  if (!(options.interval_s >= 0.01 && options.interval_s <= 86400)) {
    throw InputError(fmt::format("monitor: --interval {} is outside 0.01..86400 seconds", options.interval_s));
  }
  if (options.count < 0) throw InputError("monitor: --count must not be negative");
  if (options.pid < 0) throw InputError(fmt::format("monitor: --pid {} is not a process id", options.pid));
  if (options.pid > 0) {
    auto stat = read_proc_stat(options.pid);
    if (!stat || stat->state == 'Z') throw InputError(fmt::format("no process with pid {}", options.pid));
  }
}

void sleep_until(int64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000), static_cast<long>(deadline_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

int run_monitor(const MonitorOptions& options) {
  check_options(options);
  Sysmon sysmon;
  if (options.verbose && !sysmon.gpu_absent_reason().empty()) {
    fmt::print(stderr, "stepscope: no GPU section: {}\n", sysmon.gpu_absent_reason());
  }
  Renderer render = make_renderer(options, sysmon);
  std::vector<pid_t> tree = options.pid > 0 ? follow_tree(options.pid, {}) : std::vector<pid_t>{};
  const auto interval_ns = static_cast<int64_t>(options.interval_s * 1e9);
  int64_t next = monotonic_ns();
  sysmon.sample(next, tree);  // primes the deltas; nothing to show yet
  for (int64_t n = 0; options.count == 0 || n < options.count; ++n) {
    next = std::max(next + interval_ns, monotonic_ns());  // after a stall, do not burst
    sleep_until(next);
    if (options.pid > 0) {
      tree = follow_tree(options.pid, tree);
      if (tree.empty()) return 0;  // the job is over
    }
    SysmonSample sample = sysmon.sample(monotonic_ns(), tree);
    for (const std::string& warning : sample.warnings) fmt::print(stderr, "stepscope: warning: {}\n", warning);
    std::string text = render(sample);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);  // each interval, so the output can be piped
  }
  return 0;
}

}  // namespace

Command add_monitor_command(CLI::App& app) {
  auto options = std::make_shared<MonitorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "monitor", "System, process-tree and GPU utilization every interval (nvidia-smi, top and iostat in one)");
  cmd->add_option("-p,--pid", options->pid, "also show this process and its descendants; exit when they are gone");
  cmd->add_option("-i,--interval", options->interval_s, "seconds between samples")->capture_default_str();
  cmd->add_option("-n,--count", options->count, "stop after this many samples (default: until Ctrl-C)");
  cmd->add_option("-f,--format", options->format, "output format")
      ->check(CLI::IsMember({"table", "csv", "jsonl"}))
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", options->verbose, "per-core breakdown, unreadable /proc entries, why no GPU");
  cmd->footer(
      "Examples:\n  stepscope monitor\n  stepscope monitor --pid 1234 --format jsonl > counters.jsonl\n"
      "  stepscope monitor --interval 0.5 --count 20 --format csv\n"
      "Counters and formats: docs/monitor.md.");
  return [options] { return run_monitor(*options); };
}

}  // namespace stepscope::cli
