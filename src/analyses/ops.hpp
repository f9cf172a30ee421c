// Operators: torch.autograd.profiler's key_averages() computed from a Run's
// host spans, so that the numbers equal what torch prints for the same trace.
//
// Semantics (torch/autograd/profiler_util.py, EventList): per thread, host
// events (cpu ops, user annotations, Python functions, runtime calls) nest by
// time: sorted by (start, -end), an event is the child of the innermost open
// event that contains it entirely; one that spills past that event's end is
// not its child. An only child with its parent's name is merged into the
// parent. Self CPU = duration minus the durations of the direct children
// (negative when children overlap each other, as in torch). Device time of a
// host event = its own device activity (kernels, copies, memsets whose runtime
// launch, linked by correlation, ran under it as the innermost cpu op) plus
// that of its children.
// Device activity also forms rows of its own, with device time only.
// Details: docs/ops.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

class HostSpansByThread;  // analyses/spans/span_index.hpp
class DeviceLaunches;     // analyses/device/activity.hpp

// The rows torch keeps apart even when names are equal.
enum class OpRowKind : uint8_t { kHost, kUserAnnotation, kDevice };
const char* op_row_kind_name(OpRowKind kind);

struct OpStats {
  std::string name;          // as torch shows it: ProfilerStep#N becomes ProfilerStep*
  OpRowKind kind = OpRowKind::kHost;
  StringId input_shapes = StringTable::kEmpty;  // when grouped by shapes
  int64_t calls = 0;
  int64_t self_cpu_ns = 0;
  int64_t cpu_total_ns = 0;
  int64_t self_device_ns = 0;
  int64_t device_total_ns = 0;
};

struct OpsOptions {
  bool group_by_input_shapes = false;
};

struct OpsAnalysis {
  std::vector<OpStats> ops;  // by self CPU time, or self device time when it is larger, descending
  bool grouped_by_input_shapes = false;
  int64_t self_cpu_total_ns = 0;     // over all rows: torch's "Self CPU time total"
  int64_t self_device_total_ns = 0;  // torch's "Self CUDA time total"
};

OpsAnalysis analyze_ops(const Run& run, const OpsOptions& options = {});
// The same with the span orders `report` built once for all its analyses.
OpsAnalysis analyze_ops(const Run& run, const HostSpansByThread& host_spans, const DeviceLaunches& launches,
                        const OpsOptions& options = {});

}  // namespace stepscope
