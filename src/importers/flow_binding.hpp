// Binding Chrome-trace flow events ("s"/"f") to the slices they connect.
// Chrome binds a flow event to a slice on its own thread: "s" (and "f" with
// "bp":"e") to the innermost slice enclosing its timestamp, other "f" to the
// next slice starting at or after it. Kineto puts each endpoint exactly at
// the start of its slice (the runtime launch, the kernel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// One flow is the endpoints of one (kind, id): ids of different categories
// are distinct flows (Kineto reuses them). Only what the trace says: what
// binding finds (each endpoint's slice) it keeps in arrays of its own, 4
// bytes an endpoint, so a trace's million endpoints stay 40 bytes each and
// binding never writes to them.
struct FlowEndpoint {
  StringId kind;     // the category
  bool id_is_text;   // `id` numbers a string id, else it is the id itself
  bool is_start;
  bool binds_enclosing;  // else the next slice (Chrome's default for "f")
  int64_t id;
  int64_t pid, tid, ts_ns;
};
static_assert(sizeof(FlowEndpoint) == 40, "a trace holds a million endpoints: keep them small");

inline constexpr uint32_t kNoFlowTrack = std::numeric_limits<uint32_t>::max();

// The tracks of spans and endpoints, numbered 0..count-1 by the caller (the
// importer knows each span's thread as it adds it, so binding need not hash
// a million spans' (pid, tid) again).
struct FlowTracks {
  std::vector<uint32_t> of_spans;      // span i's track
  std::vector<uint32_t> of_endpoints;  // endpoint i's track, or kNoFlowTrack (no spans there)
  size_t count = 0;
};

struct FlowBindingCounts {
  size_t unbound = 0;   // endpoints on no slice of their thread
  size_t unpaired = 0;  // endpoints whose flow lacks a start or an end
};

// Appends to `flows` one Flow per bound end endpoint, from the latest start
// of its flow at or before it (else the flow's first start), flows in the
// order of their (kind, whether the id is text, id), each flow's ends in
// time order, then trace order. `endpoints` (in trace order) are only read.
// With `two_threads`, half of the binding runs on a second thread; the
// result is the same.
FlowBindingCounts bind_flows(const std::vector<Span>& spans, FlowTracks tracks, const std::vector<FlowEndpoint>& endpoints,
                             std::vector<Flow>& flows, bool two_threads = false);

}  // namespace stepscope
