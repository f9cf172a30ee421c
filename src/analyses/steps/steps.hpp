// Step anatomy: where each training step's time went (data wait, forward,
// backward, optimizer, other), throughput, step-time distribution, memory,
// and, where the sampler ran, which functions the data wait spent its time in.
//
// Input: the step and phase spans and per-step counters that the Python
// hooks record (docs/steps.md), or, in a run without them, a torch.profiler
// trace's ProfilerStep#N ranges and the annotations inside them
// (trace_steps.hpp). Steps are kept per process; a process that reports a
// rank (torchrun's RANK, a trace's distributedInfo) is that rank.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyses/spans/span_census.hpp"
#include "run/run.hpp"

namespace stepscope {

enum class StepPhase { kDataWait, kForward, kBackward, kOptimizer, kOther };
inline constexpr size_t kStepPhaseCount = 5;
const char* step_phase_name(StepPhase phase);

struct StepRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t tid = 0;
  std::array<int64_t, kStepPhaseCount> phase_ns{};  // by StepPhase; other = the rest
  int64_t samples = -1;  // -1: unknown
  int64_t tokens = -1;
  int64_t host_peak_bytes = -1;
  int64_t device_peak_bytes = -1;
  bool warmup = false;
  int64_t time_ns() const { return end_ns - start_ns; }
};

struct StepTimePercentiles {
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0;
};

struct HistogramBin {
  double low_ms = 0, high_ms = 0;
  uint64_t count = 0;
};

// The steps of one process (one rank), and figures over its steady steps.
struct ProcessSteps {
  int64_t pid = 0;
  std::optional<int64_t> rank;
  std::vector<StepRecord> steps;  // in time order
  size_t warmup_steps = 0;
  std::optional<double> samples_per_sec;  // steady steps with known samples
  std::optional<double> tokens_per_sec;
  StepTimePercentiles step_time;
  std::vector<HistogramBin> histogram;
  std::array<double, kStepPhaseCount> phase_fractions{};  // of steady step time
  std::optional<int64_t> peak_host_bytes;    // over all steps
  std::optional<int64_t> peak_device_bytes;
  bool host_peak_per_step = false;  // false: the process's peak so far (no clear_refs)
  // The share of its steady steps it waits for other ranks (collective_wait.hpp);
  // none without samples in them.
  std::optional<double> collective_wait_fraction;
  // Trace steps only: the ProfilerStep ranges seen, whether the last was
  // left out (cut short by the profiler), and the DataLoader iterator class
  // its data waits name ("_SingleProcessDataLoaderIter": num_workers=0).
  size_t profiler_ranges = 0;
  bool last_range_left_out = false;
  std::string loader_iterator;
};

// Where the steps came from.
enum class StepsOrigin { kNone, kHooks, kProfilerSteps };
const char* steps_origin_name(StepsOrigin origin);

struct FunctionSamples {
  StringId function = StringTable::kEmpty;
  StringId file = StringTable::kEmpty;
  uint64_t samples = 0;
};

// Sampler samples of a process's step thread, by phase, and the leaf
// functions that dominate its data waits and the DataLoader workers'
// batches. Empty when the run has no samples.
struct StepSampleAttribution {
  std::array<uint64_t, kStepPhaseCount> by_phase{};
  uint64_t outside_steps = 0;
  std::vector<FunctionSamples> data_wait_functions;  // most samples first
  uint64_t data_wait_samples = 0;
  std::vector<FunctionSamples> worker_functions;
  uint64_t worker_samples = 0;
};

struct StepsAnalysis {
  StepsOrigin origin = StepsOrigin::kNone;
  std::vector<ProcessSteps> processes;  // with steps; ordered by rank, then pid
  size_t primary = 0;                   // the process the run-level figures describe
  // Of each process, as if it were the primary: in the order of `processes`.
  std::vector<StepSampleAttribution> attributions;
  const StepSampleAttribution& attribution() const;  // the primary's (empty without samples)
  bool empty() const { return processes.empty(); }
};

struct StepsOptions {
  size_t top_functions = 5;
  size_t histogram_bins = 10;
};

StepsAnalysis analyze_steps(const Run& run, const StepsOptions& options = {});
// The same with the trace's ProfilerStep ranges and the spans' census found
// already (`report` takes them from its DeviceLaunches and host span index).
StepsAnalysis analyze_steps(const Run& run, const StepsOptions& options,
                            const std::vector<const Span*>& profiler_steps, const SpanCensus& census);

// `steps` as if process `primary` were the one its run-level figures and
// sample attribution describe: what diagnoses another rank of a run alone.
StepsAnalysis with_primary(StepsAnalysis steps, size_t primary);

// The warm-up rule: steps that are not yet steady (lazy initialization,
// worker start-up, allocator growth) are left out of the run-level figures.
size_t warmup_step_count(size_t steps);

}  // namespace stepscope
