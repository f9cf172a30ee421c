// Binding Chrome-trace flow events ("s"/"f") to the slices they connect.
// Chrome binds a flow event to a slice on its own thread: "s" (and "f" with
// "bp":"e") to the innermost slice enclosing its timestamp, other "f" to the
// next slice starting at or after it. Kineto puts each endpoint exactly at
// the start of its slice (the runtime launch, the kernel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct FlowEndpoint {
  uint32_t group;  // one group per (cat, id)
  bool is_start;
  bool binds_enclosing;  // else the next slice (Chrome's default for "f")
  int64_t pid, tid, ts_ns;
};

struct FlowBindingCounts {
  size_t unbound = 0;   // endpoints on no slice of their thread
  size_t unpaired = 0;  // endpoints whose flow lacks a start or an end
};

// Appends to `flows` one Flow per bound end endpoint, from the latest start
// of its group at or before it (else the group's first start). The flow's
// kind is `group_kinds[group]`.
FlowBindingCounts bind_flows(const std::vector<Span>& spans, const std::vector<FlowEndpoint>& endpoints,
                             const std::vector<StringId>& group_kinds, std::vector<Flow>& flows);

}  // namespace stepscope
