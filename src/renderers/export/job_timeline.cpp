#include "renderers/export/job_timeline.hpp"

#include <fmt/format.h>

#include "importers/chrome_trace.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// What the run's clock reads less the wall clock's, when the recorder wrote both.
std::optional<int64_t> wall_clock_offset(const Run& run) {
  std::optional<int64_t> unix_ns = run.metadata_int("start_unix_ns");
  std::optional<int64_t> clock_ns = run.metadata_int("start_clock_ns");
  if (!unix_ns || !clock_ns) return std::nullopt;
  return *unix_ns - *clock_ns;
}

void shift_times(Run& run, int64_t by) {
  for (Sample& s : run.samples) s.ts_ns += by;
  for (Span& s : run.spans) {
    s.start_ns += by;
    s.end_ns += by;
  }
  for (CounterValue& v : run.counter_values) v.ts_ns += by;
  for (Process& p : run.processes) {
    p.start_ns += by;
    if (p.end_ns != 0) p.end_ns += by;
  }
}

// An imported trace's string ids (synthetic, far below zero) stay as they
// are: they go back to the file as their strings.
int64_t moved(int64_t pid, int64_t by) { return is_synthetic_id(pid) ? pid : pid + by; }

void shift_pids(Run& run, int64_t by) {
  bool system_counters = false;
  for (CounterTrack& t : run.counter_tracks) {
    system_counters |= t.pid == 0;
    t.pid = moved(t.pid, by);
  }
  for (Sample& s : run.samples) {
    const int64_t pid = moved(s.pid, by);
    if (!fits_sample_id(pid)) {
      throw InputError(fmt::format("a job's timeline holds the samples of {} runs at most (a sample's pid is 32-bit)",
                                   (INT32_MAX - kJobPidStride) / kJobPidStride));
    }
    s.pid = static_cast<int32_t>(pid);
  }
  for (Span& s : run.spans) s.pid = moved(s.pid, by);
  for (Thread& t : run.threads) t.pid = moved(t.pid, by);
  for (Process& p : run.processes) {
    p.pid = moved(p.pid, by);
    if (p.parent_pid != 0) p.parent_pid = moved(p.parent_pid, by);
  }
  // The host's system-wide counters, pid 0 no more, as a process of their own.
  if (system_counters) run.add_process(by, "system");
}

std::string host_label(const Run& run, size_t index) {
  auto host = run.metadata.find("host");
  std::string label = host != run.metadata.end() ? host->second : fmt::format("run {}", index);
  if (auto node = run.metadata_int("node_rank")) label += fmt::format(" node {}", *node);
  return label;
}

}  // namespace

std::string place_on_job_timeline(Run& run, size_t index) {
  std::optional<int64_t> offset = wall_clock_offset(run);
  if (offset) shift_times(run, *offset);
  shift_pids(run, static_cast<int64_t>(index + 1) * kJobPidStride);
  const std::string label = host_label(run, index);
  for (Process& p : run.processes) {
    if (is_synthetic_id(p.pid)) continue;
    p.command = run.strings.intern(fmt::format("{}: {}", label, run.strings.get(p.command)));
  }
  if (offset) return "";
  return fmt::format("{} has no wall-clock anchor (start_unix_ns, start_clock_ns): its own clock is kept", label);
}

}  // namespace stepscope
