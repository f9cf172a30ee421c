#include "analyses/profile.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analyses/recent_answers.hpp"
#include "analyses/spans/span_index.hpp"
#include "analyses/thread_key.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// Weights by thread and stack of every sample of the run: a hash table keyed
// by the thread's number and the stack, where a tree of threads, each a tree
// of stacks, took two walks per sample. Threads come out in (pid, tid)
// order, each one's stacks by id.
std::vector<ThreadProfile> profile_samples(const Run& run, int64_t period_ns, const ProfileOptions& options) {
  std::unordered_map<ThreadKey, uint32_t, ThreadKeyHash> thread_numbers;
  std::vector<ThreadKey> threads;
  std::unordered_map<uint64_t, StackWeight> weights;  // by thread number << 32 | stack
  RecentAnswers<ThreadKey, uint32_t, ThreadKeyHash> recent_numbers;
  auto number_of = [&](const ThreadKey& thread) {
    auto [number, added] = thread_numbers.try_emplace(thread, static_cast<uint32_t>(threads.size()));
    if (added) threads.push_back(thread);
    return number->second;
  };
  for (const Sample& s : run.samples) {
    if (!sample_in_profile(s, options)) continue;
    const uint32_t number = recent_numbers.get({s.pid, s.tid}, number_of);
    StackWeight& w = weights[uint64_t{number} << 32 | s.stack];
    w.stack = s.stack;
    w.count += 1;
    w.weight_ns += period_ns;
  }
  std::vector<ThreadProfile> out(threads.size());
  for (size_t i = 0; i < threads.size(); ++i) std::tie(out[i].pid, out[i].tid) = threads[i];
  for (const auto& [key, weight] : weights) out[key >> 32].stacks.push_back(weight);
  for (ThreadProfile& thread : out) {
    std::sort(thread.stacks.begin(), thread.stacks.end(),
              [](const StackWeight& a, const StackWeight& b) { return a.stack < b.stack; });
  }
  std::sort(out.begin(), out.end(), [](const ThreadProfile& a, const ThreadProfile& b) {
    return std::tie(a.pid, a.tid) < std::tie(b.pid, b.tid);
  });
  return out;
}

struct OpenSpan {
  const Span* span;
  StackId stack;
  int64_t child_ns;
};

// A span's frame is its name's, interned once per name, not per span.
class NameFrames {
 public:
  NameFrames(const StringTable& strings, FrameTable& frames)
      : frame_name_(strings), frames_(frames), frame_of_(strings.size(), kUnset) {}
  FrameId frame(StringId name) {
    FrameId& frame = frame_of_[name];
    if (frame == kUnset) frame = frames_.intern({frame_name_(name), StringTable::kEmpty, 0, FrameKind::kMarker});
    return frame;
  }

 private:
  static constexpr FrameId kUnset = UINT32_MAX;
  SpanFrameName frame_name_;
  FrameTable& frames_;
  std::vector<FrameId> frame_of_;  // by string id
};

// One thread's weights by stack id, in a table indexed by stack id that the
// threads reuse: millions of spans land on far fewer stacks, so a lookup is
// one read, where a map took a tree walk per span.
class StackWeightTable {
 public:
  void add(StackId stack, int64_t ns) {
    if (stack >= weights_.size()) weights_.resize(stack + 1);
    StackWeight& w = weights_[stack];
    if (w.count == 0) touched_.push_back(stack);
    w.stack = stack;
    w.count += 1;
    w.weight_ns += ns;
  }
  // The weights added since the last take, ordered by stack id; empties the table.
  std::vector<StackWeight> take() {
    std::sort(touched_.begin(), touched_.end());
    std::vector<StackWeight> out;
    out.reserve(touched_.size());
    for (StackId stack : touched_) {
      out.push_back(weights_[stack]);
      weights_[stack] = {};
    }
    touched_.clear();
    return out;
  }

 private:
  std::vector<StackWeight> weights_;  // by stack id; count 0 when untouched
  std::vector<StackId> touched_;
};

// Walks one thread's spans in start order. A span that overlaps its parent
// without nesting (rare, from clock rounding) is clipped to the parent.
void profile_thread_spans(const Run& run, std::span<const HostSpan> spans, const ProfileOptions& options,
                          NameFrames& frames, StackTree& stacks, StackWeightTable& weights) {
  std::vector<OpenSpan> open;
  auto close_top = [&] {
    const OpenSpan& top = open.back();
    int64_t self = std::max<int64_t>(0, top.span->end_ns - top.span->start_ns - top.child_ns);
    weights.add(top.stack, self);
    open.pop_back();
  };
  for (const HostSpan& host : spans) {
    const Span* span = &run.spans[host.id];
    if (span->end_ns < span->start_ns || !options.in_window(span->start_ns)) continue;
    while (!open.empty() && open.back().span->end_ns <= span->start_ns) close_top();
    StackId parent = open.empty() ? StackTree::kRoot : open.back().stack;
    int64_t end = open.empty() ? span->end_ns : std::min(span->end_ns, open.back().span->end_ns);
    if (!open.empty()) open.back().child_ns += end - span->start_ns;
    open.push_back({span, stacks.push(parent, frames.frame(span->name)), 0});
  }
  while (!open.empty()) close_top();
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
  NameFrames frames(run.strings, profile.own_frames_);
  StackWeightTable weights;
  // The index's threads are distinct and ordered by (pid, tid), the order of the profile's.
  for (const HostSpansByThread::Thread& thread : host_spans->threads()) {
    // A thread of nothing but spans of kind other is a trace's own
    // bookkeeping (Kineto's "PyTorch Profiler (0)" range over the whole
    // trace, on its "Spans" track), not a CPU thread's work: its "self time"
    // would be the whole trace and top the profile. The process summary
    // calls such a process a trace track by the same count.
    if (thread.host_work == 0) continue;
    profile_thread_spans(run, thread.spans, options, frames, profile.own_stacks_, weights);
    std::vector<StackWeight> stacks = weights.take();
    if (!stacks.empty()) profile.threads.push_back({.pid = thread.pid, .tid = thread.tid, .stacks = std::move(stacks)});
  }
  profile.source = profile.threads.empty() ? ProfileSource::kEmpty : ProfileSource::kSpans;
  return profile;
}

}  // namespace stepscope
