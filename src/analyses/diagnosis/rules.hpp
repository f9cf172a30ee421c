// The diagnosis rules, one family per file (diagnosis/*_rules.cpp). Each
// returns a finding when its mechanism shows in the run, else nothing.
// Thresholds and their reasons are in docs/diagnosis.md.
#pragma once

#include <optional>
#include <vector>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/diagnosis/facts.hpp"

namespace stepscope {

// input_bound, dataloader_workers_saturated or io_bound_workers: the same
// data wait explained by one of three mechanisms, so at most one of them.
std::optional<Finding> input_pipeline_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);

// logging_overhead, optimizer_heavy, gc_pauses: host work in the step
// thread that a change of code removes.
std::optional<Finding> logging_overhead_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
std::optional<Finding> optimizer_heavy_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
std::optional<Finding> gc_pauses_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
// A frame of the code logging_overhead or gc_pauses name (logging, metric
// loggers, tensor formatting; the collector's marker): step_overhead leaves
// their samples to them.
bool claimed_by_host_rules(const Run& run, const Frame& frame);

// step_overhead: much of the step outside data wait, forward, backward and
// the optimizer, in code no named rule explains (checkpoint saving,
// evaluation, metric computation): the functions that take it.
std::optional<Finding> step_overhead_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);

// python_overhead: many tiny operators whose host-side cost (Python between
// them, dispatch) paces the step while the device, if any, idles. From a
// trace's operator spans.
std::optional<Finding> python_overhead_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
// The same on a recording with native frames (record --native), from its
// samples: python_rules_recorded.cpp. Both give this remedy.
extern const char* const kPythonOverheadRemedy;
std::optional<Finding> recorded_python_overhead(const DiagnosisInput& input, const DiagnosisFacts& facts);

// sync_in_loop: the host blocked on device synchronizations inside steps.
std::optional<Finding> sync_in_loop_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);

// host_collectives: the step thread idle while collectives run on the host
// (torch.distributed's gloo backend). From a trace's spans.
std::optional<Finding> host_collectives_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);

// The device side, read from the GPU analyses (DiagnosisInput::gpu):
// gpu_idle or host_launch_bound (the same idle time explained two ways, so at
// most one), communication_not_overlapped, pageable_memcpy, small_memcpy.
std::optional<Finding> gpu_utilization_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
std::optional<Finding> communication_not_overlapped_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
std::optional<Finding> pageable_memcpy_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);
std::optional<Finding> small_memcpy_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);

// memory_pressure: host or device memory near capacity.
std::optional<Finding> memory_pressure_rule(const DiagnosisInput& input, const DiagnosisFacts& facts);

// Thresholds, shared with the tests.
inline constexpr double kInputBoundShare = 0.10;      // data wait of step time
inline constexpr double kIdleCoresSaturated = 0.5;    // fewer idle cores: saturated
inline constexpr double kDiskWaitShare = 0.30;        // of the loaders' busy samples
inline constexpr double kDiskUtilSaturated = 90;      // percent, peak over steady steps
inline constexpr double kLoggingShare = 0.05;         // of the step thread's samples
inline constexpr double kOptimizerShare = 0.20;       // optimizer phase of step time
inline constexpr double kGcShare = 0.05;              // of steady step time
inline constexpr double kStepOverheadShare = 0.20;    // unexplained "other" of step time
inline constexpr double kSyncShare = 0.03;           // device idle caused by syncs, of step time
inline constexpr double kHostCollectiveShare = 0.10;  // host collectives the step thread waits on, of step time
inline constexpr double kPythonOverheadShare = 0.20;  // host per-operator cost of step time
inline constexpr int64_t kTinyOpNs = 20'000;          // a top-level operator shorter than this is overhead
inline constexpr size_t kMinOpsPerStep = 100;         // fewer top-level operators per step say nothing
inline constexpr int64_t kLongGapNs = 1'000'000;      // a gap without operators this long is a stall, not overhead
inline constexpr int64_t kStallFactor = 10;           // an operator beyond this x its name's median stalled
inline constexpr uint64_t kMinRuleSamples = 5;        // fewer samples say nothing
inline constexpr double kHostMemoryPeak = 0.80;       // tree RSS of total memory
inline constexpr double kHostMemoryAvailable = 0.10;  // least available of total
inline constexpr double kDeviceMemoryPeak = 0.90;     // of the GPU's memory
inline constexpr size_t kMinDeviceEvents = 10;        // fewer device events say nothing
inline constexpr double kGpuIdleShare = 0.25;         // device idle of its span
inline constexpr double kHostWaitOfIdle = 0.5;        // launch-bound: host wait of the streams' idle time
inline constexpr double kTinyLaunchShare = 0.5;       // launch-bound: of launches, shorter than their call
inline constexpr size_t kMinLaunches = 100;           // launch-bound: fewer launches say nothing
inline constexpr double kExposedCommShare = 0.10;     // communication no computation overlaps, of the span
inline constexpr double kPageableOfBusy = 0.10;       // pageable copies, of the device's busy time
inline constexpr size_t kMinSmallCopies = 100;        // small copies in the trace
inline constexpr double kSmallCopiesOfCopies = 0.5;   // of the copies
inline constexpr size_t kMinSmallCopiesPerStep = 10;  // when the steps are known

}  // namespace stepscope
