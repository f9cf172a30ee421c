// The recording loop behind `stepscope record`: launches a command (or
// attaches to a process), samples its process tree at a jittered rate, and
// commits the Run to its file every second, so a recorder that is killed
// loses at most the last second.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectors/job_identity.hpp"
#include "collectors/sampler.hpp"

namespace stepscope {

// Whether `record` collects GPU activity through CUPTI (docs/gpu-collector.md).
enum class GpuMode { kAuto, kOn, kOff };

struct RecordOptions {
  std::string output;
  double rate_hz = 100;
  double duration_s = 0;  // 0: until the command exits (or, attached, Ctrl-C)
  bool idle = false;      // profiles include idle threads by default
  bool native = false;    // merge native stacks into the Python ones (docs/native-stacks.md)
  GpuMode gpu = GpuMode::kAuto;
  // Keep the run file under this many bytes, dropping its oldest data (run/run_trimmer.hpp); 0: no limit.
  uint64_t max_size_bytes = 0;
  pid_t attach_pid = 0;   // attach mode when > 0
  std::vector<std::string> command;  // launch mode otherwise
  JobIdentity job;  // the host, node and job the run says it is
  // Called on the recording thread after each commit of the run file (every
  // second) and once more at the end (`last`): what publishes live metrics.
  // It must be quick, and must not throw.
  std::function<void(const Run& run, const SamplerStats& stats, int64_t now_ns, bool last)> on_commit;
};

struct RecordSummary {
  int exit_status = 0;  // the launched command's, as a shell reports it
  double seconds = 0;
  double effective_rate_hz = 0;
  uint64_t late_rounds = 0;  // rounds that started a whole period late
  SamplerStats stats;
  size_t processes = 0;
  std::vector<std::string> notes;
};

// Throws InputError for bad options, a command that cannot start, or an
// attach target that is gone or holds no Python.
RecordSummary record(const RecordOptions& options);

// The monotonic clock the Run's timestamps use.
int64_t monotonic_ns();

}  // namespace stepscope
