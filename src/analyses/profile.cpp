#include "analyses/profile.hpp"

#include <algorithm>
#include <map>
#include <utility>

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

std::vector<ThreadProfile> profile_samples(const Run& run, int64_t period_ns, bool include_idle) {
  std::map<ThreadKey, StackWeights> by_thread;
  for (const Sample& s : run.samples) {
    if (!sample_in_profile(s, {.include_idle = include_idle})) continue;
    add_weight(by_thread[{s.pid, s.tid}], s.stack, period_ns);
  }
  return to_thread_profiles(std::move(by_thread));
}

// Spans of one thread, outermost first when they start together, so a
// single pass with an open-span stack recovers the nesting.
std::map<ThreadKey, std::vector<const Span*>> host_spans_by_thread(const Run& run) {
  std::map<ThreadKey, std::vector<const Span*>> by_thread;
  for (const Span& s : run.spans) {
    if (is_host_span(s.kind) && s.end_ns >= s.start_ns) by_thread[{s.pid, s.tid}].push_back(&s);
  }
  for (auto& [key, spans] : by_thread) {
    std::stable_sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
  }
  return by_thread;
}

struct OpenSpan {
  const Span* span;
  StackId stack;
  int64_t child_ns;
};

// Walks one thread's spans in start order. A span that overlaps its parent
// without nesting (rare, from clock rounding) is clipped to the parent.
void profile_thread_spans(const std::vector<const Span*>& spans, FrameTable& frames,
                          StackTree& stacks, StackWeights& weights) {
  std::vector<OpenSpan> open;
  auto close_top = [&] {
    const OpenSpan& top = open.back();
    int64_t self = std::max<int64_t>(0, top.span->end_ns - top.span->start_ns - top.child_ns);
    add_weight(weights, top.stack, self);
    open.pop_back();
  };
  for (const Span* span : spans) {
    while (!open.empty() && open.back().span->end_ns <= span->start_ns) close_top();
    StackId parent = open.empty() ? StackTree::kRoot : open.back().stack;
    int64_t end = open.empty() ? span->end_ns : std::min(span->end_ns, open.back().span->end_ns);
    if (!open.empty()) open.back().child_ns += end - span->start_ns;
    FrameId frame = frames.intern({span->name, StringTable::kEmpty, 0, FrameKind::kMarker});
    open.push_back({span, stacks.push(parent, frame), 0});
  }
  while (!open.empty()) close_top();
}

}  // namespace

bool is_host_span(SpanKind kind) {
  return kind != SpanKind::kKernel && kind != SpanKind::kMemcpy && kind != SpanKind::kMemset;
}

int64_t ThreadProfile::total_ns() const {
  int64_t total = 0;
  for (const StackWeight& w : stacks) total += w.weight_ns;
  return total;
}

bool sample_in_profile(const Sample& sample, const ProfileOptions& options) {
  return sample.state != ThreadState::kIdle || options.include_idle;
}

bool run_wants_idle(const Run& run) {
  auto found = run.metadata.find("profile_idle");
  return found != run.metadata.end() && found->second == "1";
}

Profile build_profile(const Run& run, const ProfileOptions& options) {
  Profile profile;
  if (!run.samples.empty()) {
    auto period = run.sample_period_ns();
    if (!period) {
      throw InputError("the run has samples but no valid metadata \"sample_period_ns\"");
    }
    profile.source = ProfileSource::kSamples;
    profile.run_frames_ = &run.frames;
    profile.run_stacks_ = &run.stacks;
    profile.threads = profile_samples(run, *period, options.include_idle);
    return profile;
  }
  profile.owns_tables_ = true;
  std::map<ThreadKey, StackWeights> by_thread;
  for (auto& [key, spans] : host_spans_by_thread(run)) {
    profile_thread_spans(spans, profile.own_frames_, profile.own_stacks_, by_thread[key]);
  }
  profile.source = by_thread.empty() ? ProfileSource::kEmpty : ProfileSource::kSpans;
  profile.threads = to_thread_profiles(std::move(by_thread));
  return profile;
}

}  // namespace stepscope
