// The flame tree: the stack profile of each process aggregated into one
// prefix tree (process -> thread -> frames), with each node's time split by
// the step phase the process was in, so a flame graph can be filtered by
// phase. The HTML report draws it.
//
// Sampled runs attribute each sample to the phase spans (data wait, forward,
// backward, optimizer) of its own process, to "other" when a step span covers
// it but no phase does, and to "outside" when no step does. Traces have no
// per-sample times: their tree comes from the span-nesting profile and all of
// it is "outside" (has_phases is false).
//
// Nodes lighter than `min_fraction` of their process's total are dropped (their
// time stays in the parent's total), which bounds the tree for long runs.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analyses/profile.hpp"

namespace stepscope {

enum class FlamePhase { kDataWait, kForward, kBackward, kOptimizer, kOther, kOutside };
inline constexpr size_t kFlamePhaseCount = 6;
const char* flame_phase_name(FlamePhase phase);

struct FlameNode {
  uint32_t parent = 0;          // index in FlameProcess::nodes; the root is its own parent
  FrameId frame = 0;            // of Profile::frames(); unused for the root and thread nodes
  int64_t tid = 0;              // thread nodes only (depth 1)
  std::array<int64_t, kFlamePhaseCount> total_ns{};  // this node and everything under it
};

struct FlameProcess {
  int64_t pid = 0;
  // Parents come before children; nodes[0] is the process itself, its
  // children are threads, theirs frames.
  std::vector<FlameNode> nodes;
  int64_t total_ns() const;
};

struct FlameTree {
  bool has_phases = false;
  std::vector<FlameProcess> processes;  // ordered by pid
};

struct FlameTreeOptions {
  bool include_idle = false;  // as ProfileOptions
  double min_fraction = 1e-4;
};

// `profile` must be build_profile(run, {include_idle}) for the same options;
// the tree's FrameIds refer to its frame table.
FlameTree build_flame_tree(const Run& run, const Profile& profile, const FlameTreeOptions& options = {});

}  // namespace stepscope
