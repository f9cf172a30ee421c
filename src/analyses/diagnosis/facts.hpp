// The facts several diagnosis rules read, gathered once from the Run: the
// steady-step window of the main training process, its DataLoader workers,
// the system counters over that window, and the samples of its step thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/spans/intervals.hpp"

namespace stepscope {

struct DiskUse {
  std::string name;
  double mean_util_percent = 0;
  double max_util_percent = 0;
};

struct DiagnosisFacts {
  const ProcessSteps* primary = nullptr;  // null: the run has no steps
  int64_t main_tid = 0;                   // the thread that ran the steps
  int64_t window_start_ns = 0;            // first steady step's start
  int64_t window_end_ns = 0;              // last step's end
  int64_t steady_ns = 0;                  // summed time of steady steps

  // DataLoader worker processes: those that ran worker batches (hooks).
  std::vector<int64_t> worker_pids;
  // The main thread's data waits (hooks), sorted by start: input_bound's
  // samples and the GPU idle rule's excused idle time both come from these.
  Intervals main_data_waits;
  // The main thread's data wait, forward, backward and optimizer spans (hooks),
  // merged: the step's time outside them is its "other" phase.
  Intervals main_phases;
  // The device's activity (every kernel, copy and memset, launched in any
  // step: not the device analyses' cut) merged into busy intervals, disjoint
  // and by start; made once for the sync, Python and GPU idle rules.
  Intervals device_busy;

  // System counters over the window (record's sysmon); empty without them.
  std::optional<size_t> cores;            // cpu.N.percent tracks
  std::optional<double> idle_cores;       // mean of sum over cores of (100 - busy%) / 100
  std::optional<double> worker_cpu_cores; // workers' mean CPU, summed, in cores
  std::optional<double> main_cpu_cores;   // the main process's mean CPU, in cores
  std::optional<double> tree_cpu_cores;   // the whole recorded tree's, in cores
  std::vector<DiskUse> disks;
  // Host memory, over the whole run.
  std::optional<double> memory_total_bytes;         // the machine's: used + available
  std::optional<double> cgroup_memory_limit_bytes;  // the recorded tree's memory cgroup's, when limited
  // The least memory the tree had left: the system's available memory or,
  // in a limited cgroup, the limit less the cgroup's working set, whichever
  // is less at each poll.
  std::optional<double> min_memory_available_bytes;
  bool min_available_in_cgroup = false;       // the cgroup's room was the lesser
  std::optional<double> peak_tree_rss_bytes;  // the recorded tree, summed per poll
  // What the tree can have: the machine's memory or the cgroup's limit,
  // whichever is less.
  std::optional<double> host_memory_capacity() const;
  bool capacity_is_cgroup_limit() const;

  // Device memory: NVML's (record), and the caching allocator's peaks per
  // process and GPU (a trace's "[memory]" events), with the GPU's capacity
  // from NVML or the trace's deviceProperties.
  std::vector<std::pair<int, double>> gpu_memory_total_bytes;  // (gpu index, bytes)
  std::vector<std::pair<int, double>> gpu_memory_peak_used_bytes;
  struct AllocatorPeak {
    int64_t pid = 0;
    int gpu = 0;
    double allocated_bytes = 0, reserved_bytes = 0;
    std::optional<double> capacity_bytes;
  };
  std::vector<AllocatorPeak> allocator_peaks;

  // Garbage collections the hooks timed on the step thread inside steady steps,
  // and their times, disjoint and by start.
  Intervals main_gc_pauses;
  size_t gc_pauses = 0;
  int64_t gc_pause_ns = 0;
  int64_t gc_longest_ns = 0;
  // Evaluation inside training the hooks saw on the step thread (their
  // "evaluation" spans), disjoint and by start.
  Intervals main_evaluations;

  // Samples of the main process's step thread inside steady steps, and of
  // those, the ones in its data waits.
  std::vector<const Sample*> step_samples;
  uint64_t data_wait_samples = 0;
  uint64_t data_wait_disk_samples = 0;  // in disk wait (D state)
  // Samples of the workers' busy (not idle) threads, and of those in disk wait.
  uint64_t worker_busy_samples = 0;
  uint64_t worker_disk_samples = 0;

  // A fraction of steady step time, from a count of step-thread samples.
  double sample_share(uint64_t samples) const;
};

DiagnosisFacts gather_diagnosis_facts(const DiagnosisInput& input);

// The steps a trace's rules look inside, by start: the steps analysis's
// steady steps (hooks, or a trace's complete ProfilerStep#N ranges), else
// every ProfilerStep#N range.
Intervals step_windows(const Run& run, const DiagnosisFacts& facts);

// For each stack, the frame nearest the leaf that satisfies a predicate,
// memoized over the stack tree: a long recording's samples share few distinct
// stacks, and a stack's answer extends its parent's, so each frame and stack
// is looked at once.
class StackFrameFinder {
 public:
  static constexpr FrameId kNone = UINT32_MAX;
  StackFrameFinder(const Run& run, std::function<bool(const Frame&)> matches);
  FrameId find(StackId stack);

 private:
  static constexpr FrameId kUnknown = UINT32_MAX - 1;
  bool frame_matches(FrameId frame);
  const Run& run_;
  std::function<bool(const Frame&)> matches_;
  std::vector<int8_t> frame_state_;    // 0 unknown, 1 no, 2 yes
  std::vector<FrameId> stack_answer_;  // kUnknown until computed
};

// Whether `frame`'s file path contains one of `needles`.
bool frame_file_contains(const Run& run, const Frame& frame, const std::vector<std::string_view>& needles);

// "aten::item (8x), aten::copy_ (2x)": the `top` most frequent names, as
// findings list them.
std::string top_counts(const std::map<std::string, size_t>& counts, size_t top);

// "42%" and "2.4x", as findings write them.
std::string percent_text(double fraction);
std::string speedup_text(double speedup);

}  // namespace stepscope
