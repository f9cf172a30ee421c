// The stack profile: how much time each thread spent in each stack.
//
// It is what flame graphs and collapsed stacks draw. Sampled runs give it
// directly (each sample weighs one sampling period). Runs without samples but
// with host spans (an imported trace) give it from span nesting: each span is
// a frame named after the span (SpanFrameName), weighted by its self time, as
// speedscope and Perfetto do when they draw a trace as a flame graph.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "analyses/steps/profiler_steps.hpp"
#include "run/run.hpp"

namespace stepscope {

class HostSpansByThread;  // analyses/spans/span_index.hpp

struct StackWeight {
  StackId stack = StackTree::kRoot;
  uint64_t count = 0;     // samples, or span occurrences
  int64_t weight_ns = 0;  // wall time attributed to exactly this stack
};

struct ThreadProfile {
  int64_t pid = 0;
  int64_t tid = 0;
  std::vector<StackWeight> stacks;  // ordered by stack id, no duplicates
  int64_t total_ns() const;
};

struct ProfileOptions {
  // Samples of idle (sleeping) threads show where a program waits, which a
  // wall-clock view wants and a CPU profile does not. Threads in disk wait
  // count as busy either way: I/O-bound work is work.
  bool include_idle = false;
  // Only samples taken, and spans that start, in [from_ns, to_ns): compare
  // profiles the steady steps, without start-up and warm-up.
  int64_t from_ns = std::numeric_limits<int64_t>::min();
  int64_t to_ns = std::numeric_limits<int64_t>::max();
  bool in_window(int64_t ts) const { return ts >= from_ns && ts < to_ns; }
};

enum class ProfileSource { kSamples, kSpans, kEmpty };

class Profile {
 public:
  ProfileSource source = ProfileSource::kEmpty;
  std::vector<ThreadProfile> threads;  // ordered by (pid, tid)

  // Frames and stacks the StackIds above refer to: the Run's own for a
  // sampled run, tables built from span names otherwise. Names are StringIds
  // of the Run's string table either way.
  const FrameTable& frames() const { return owns_tables_ ? own_frames_ : *run_frames_; }
  const StackTree& stacks() const { return owns_tables_ ? own_stacks_ : *run_stacks_; }

  friend Profile build_profile(const Run& run, const ProfileOptions& options, const HostSpansByThread* host_spans);

 private:
  bool owns_tables_ = false;
  const FrameTable* run_frames_ = nullptr;
  const StackTree* run_stacks_ = nullptr;
  FrameTable own_frames_;
  StackTree own_stacks_;
};

// Whether a sample counts in a profile: idle ones only when asked, and only
// inside the options' time window.
bool sample_in_profile(const Sample& sample, const ProfileOptions& options);

// Whether a run asks for idle samples in its profile (`record --idle`).
bool run_wants_idle(const Run& run);

// Throws InputError when the run has samples but no valid sample period.
// The returned profile refers to `run`, which must outlive it.
Profile build_profile(const Run& run, const ProfileOptions& options = {});
// The same with the host span order `report` built once for all its analyses
// (null for a sampled run, which needs none).
Profile build_profile(const Run& run, const ProfileOptions& options, const HostSpansByThread* host_spans);

// Host spans are those on CPU threads; device activity (kernels, copies,
// memsets, device-side user ranges) has its own analyses and is left out of
// the stack profile.
bool is_host_span(SpanKind kind);

// The name of a span's frame: the span's, except that every ProfilerStep#N is
// kProfilerStepGroup once the importer interned it (runs imported before keep
// one frame per step). Each name is looked at once, here, not once per span.
class SpanFrameName {
 public:
  explicit SpanFrameName(const StringTable& strings)
      : step_group_(strings.find(kProfilerStepGroup)), steps_(strings) {}
  StringId operator()(StringId span_name) const {
    return step_group_ && steps_.is_step_name(span_name) ? *step_group_ : span_name;
  }

 private:
  std::optional<StringId> step_group_;
  ProfilerStepFinder steps_;
};

}  // namespace stepscope
