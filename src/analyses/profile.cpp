#include "analyses/profile.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "analyses/span_index.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

using ThreadKey = std::pair<int64_t, int64_t>;
using StackWeights = std::map<StackId, StackWeight>;

std::vector<ThreadProfile> to_thread_profiles(std::map<ThreadKey, StackWeights>&& by_thread) {
  std::vector<ThreadProfile> out;
  out.reserve(by_thread.size());
  for (auto& [key, weights] : by_thread) {
    ThreadProfile& t = out.emplace_back();
    t.pid = key.first;
    t.tid = key.second;
    t.stacks.reserve(weights.size());
    for (auto& [id, w] : weights) t.stacks.push_back(w);
  }
  return out;
}

void add_weight(StackWeights& weights, StackId stack, int64_t ns) {
  StackWeight& w = weights[stack];
  w.stack = stack;
  w.count += 1;
  w.weight_ns += ns;
}

std::vector<ThreadProfile> profile_samples(const Run& run, int64_t period_ns, const ProfileOptions& options) {
  std::map<ThreadKey, StackWeights> by_thread;
  for (const Sample& s : run.samples) {
    if (!sample_in_profile(s, options)) continue;
    add_weight(by_thread[{s.pid, s.tid}], s.stack, period_ns);
  }
  return to_thread_profiles(std::move(by_thread));
}

struct OpenSpan {
  const Span* span;
  StackId stack;
  int64_t child_ns;
};

// Walks one thread's spans in start order. A span that overlaps its parent
// without nesting (rare, from clock rounding) is clipped to the parent.
void profile_thread_spans(const Run& run, std::span<const SpanId> spans, const ProfileOptions& options,
                          FrameTable& frames, StackTree& stacks, StackWeights& weights) {
  std::vector<OpenSpan> open;
  auto close_top = [&] {
    const OpenSpan& top = open.back();
    int64_t self = std::max<int64_t>(0, top.span->end_ns - top.span->start_ns - top.child_ns);
    add_weight(weights, top.stack, self);
    open.pop_back();
  };
  for (SpanId id : spans) {
    const Span* span = &run.spans[id];
    if (span->end_ns < span->start_ns || !options.in_window(span->start_ns)) continue;
    while (!open.empty() && open.back().span->end_ns <= span->start_ns) close_top();
    StackId parent = open.empty() ? StackTree::kRoot : open.back().stack;
    int64_t end = open.empty() ? span->end_ns : std::min(span->end_ns, open.back().span->end_ns);
    if (!open.empty()) open.back().child_ns += end - span->start_ns;
    FrameId frame = frames.intern({span->name, StringTable::kEmpty, 0, FrameKind::kMarker});
    open.push_back({span, stacks.push(parent, frame), 0});
  }
  while (!open.empty()) close_top();
}

// A track that holds nothing but spans of kind other is a trace's own
// bookkeeping (Kineto's "PyTorch Profiler (0)" range over the whole trace, on
// its "Spans" track), not a CPU thread's work: its "self time" would be the
// whole trace and top the profile.
bool only_unknown_kinds(const Run& run, std::span<const SpanId> spans) {
  return std::all_of(spans.begin(), spans.end(), [&](SpanId id) { return run.spans[id].kind == SpanKind::kOther; });
}

}  // namespace

bool is_host_span(SpanKind kind) { return !runs_on_device(kind); }

int64_t ThreadProfile::total_ns() const {
  int64_t total = 0;
  for (const StackWeight& w : stacks) total += w.weight_ns;
  return total;
}

bool sample_in_profile(const Sample& sample, const ProfileOptions& options) {
  return (sample.state != ThreadState::kIdle || options.include_idle) && options.in_window(sample.ts_ns);
}

bool run_wants_idle(const Run& run) {
  auto found = run.metadata.find("profile_idle");
  return found != run.metadata.end() && found->second == "1";
}

Profile build_profile(const Run& run, const ProfileOptions& options) {
  if (!run.samples.empty()) return build_profile(run, options, nullptr);
  HostSpansByThread host_spans(run);
  return build_profile(run, options, &host_spans);
}

Profile build_profile(const Run& run, const ProfileOptions& options, const HostSpansByThread* host_spans) {
  Profile profile;
  if (!run.samples.empty()) {
    auto period = run.sample_period_ns();
    if (!period) {
      throw InputError("the run has samples but no valid metadata \"sample_period_ns\"");
    }
    profile.source = ProfileSource::kSamples;
    profile.run_frames_ = &run.frames;
    profile.run_stacks_ = &run.stacks;
    profile.threads = profile_samples(run, *period, options);
    return profile;
  }
  profile.owns_tables_ = true;
  std::map<ThreadKey, StackWeights> by_thread;
  for (const HostSpansByThread::Thread& thread : host_spans->threads()) {
    if (only_unknown_kinds(run, thread.spans)) continue;
    StackWeights weights;
    profile_thread_spans(run, thread.spans, options, profile.own_frames_, profile.own_stacks_, weights);
    if (!weights.empty()) by_thread[{thread.pid, thread.tid}] = std::move(weights);
  }
  profile.source = by_thread.empty() ? ProfileSource::kEmpty : ProfileSource::kSpans;
  profile.threads = to_thread_profiles(std::move(by_thread));
  return profile;
}

}  // namespace stepscope
