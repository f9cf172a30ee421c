// The processes of a run and what their threads were doing: the first thing
// to check in a training job's tree (is the main process busy? are the
// DataLoader workers busy, idle, or blocked on disk?).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyses/spans/span_census.hpp"
#include "run/run.hpp"

namespace stepscope {

// What a run's "process" is. A trace (and a recording with --gpu) also
// names device tracks as processes (Kineto's GPU "processes" with pid 0..7,
// the collector's "GPU 0"), and Kineto adds tracks of its own ("Spans",
// "Traces"): they are no processes of the host.
enum class ProcessRole {
  kHost,        // sampled, or has host spans (operators, ranges, runtime calls, steps)
  kDevice,      // only device activity: kernels, copies, memsets, device annotations
  kTraceTrack,  // an imported trace's track with neither
};
const char* process_role_name(ProcessRole role);

struct ProcessSummary {
  ProcessRole role = ProcessRole::kHost;
  int64_t pid = 0;
  int64_t parent_pid = 0;
  StringId command = StringTable::kEmpty;
  std::string python_version;  // empty when not sampled as Python
  int64_t start_ns = 0, end_ns = 0;
  int32_t exit_status = -1;
  size_t threads = 0;  // threads sampled or with spans; for a device, its streams
  size_t spans = 0;
  uint64_t samples = 0;
  uint64_t running = 0, idle = 0, disk_wait = 0;  // samples by thread state
};

std::vector<ProcessSummary> summarize_processes(const Run& run);
// The same from the spans' census made already (the report's host span index).
std::vector<ProcessSummary> summarize_processes(const Run& run, const SpanCensus& census);

}  // namespace stepscope
