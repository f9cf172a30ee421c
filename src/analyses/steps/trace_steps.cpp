#include "analyses/steps/trace_steps.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "analyses/spans/intervals.hpp"
#include "analyses/steps/phase_claims.hpp"
#include "analyses/steps/profiler_steps.hpp"

namespace stepscope {

namespace {

constexpr std::string_view kDataWaitPrefix = "enumerate(DataLoader)#";

bool contains_forward(std::string_view name) {
  for (std::string_view word : {"forward", "Forward", "FORWARD"}) {
    if (name.find(word) != std::string_view::npos) return true;
  }
  return false;
}

// Which phase a range's name puts it in, decided once per name rather than
// by string searches on each of millions of spans.
class NameRoles {
 public:
  enum Role : uint8_t { kDataWait, kOptimizer, kBackward, kForwardIfOp, kForwardIfRange, kForwardAlways, kNone };

  explicit NameRoles(const StringTable& strings) : strings_(strings), roles_(strings.size(), kUnknown) {}

  Role role(StringId name) {
    uint8_t& role = roles_[name];
    if (role == kUnknown) role = decide(strings_.get(name));
    return static_cast<Role>(role);
  }

 private:
  static constexpr uint8_t kUnknown = 0xff;
  static Role decide(std::string_view name) {
    if (is_data_wait_range(name)) return kDataWait;
    if (is_optimizer_range(name)) return kOptimizer;
    if (is_backward_op(name)) return kBackward;
    bool op_counts = !is_profiler_step_name(name);  // as a cpu op
    bool range_counts = contains_forward(name);     // as a user range
    if (op_counts && range_counts) return kForwardAlways;
    if (op_counts) return kForwardIfOp;
    return range_counts ? kForwardIfRange : kNone;
  }
  const StringTable& strings_;
  std::vector<uint8_t> roles_;  // by string id
};

// Appends an interval to a list that is merged later (merge_unsorted),
// joining it to the last one already when it starts inside it: spans come
// mostly in time order, so a thread's million operators leave a list of its
// busy stretches, with the same union.
void add_interval(Intervals& intervals, const Interval& interval) {
  if (!intervals.empty() && interval.start_ns >= intervals.back().start_ns &&
      interval.start_ns <= intervals.back().end_ns) {
    intervals.back().end_ns = std::max(intervals.back().end_ns, interval.end_ns);
  } else {
    intervals.push_back(interval);
  }
}

// The ranges of one process that the phases are read from.
struct ProcessRanges {
  std::map<int64_t, Intervals> data_wait, optimizer, forward;  // by thread
  Intervals backward;                                          // any thread
  std::string loader_iterator;

  void add(const Run& run, const Span& s, NameRoles::Role role) {
    Interval interval{s.start_ns, s.end_ns};
    switch (role) {
      case NameRoles::kDataWait:
        add_interval(data_wait[s.tid], interval);
        if (loader_iterator.empty()) loader_iterator = iterator_class(run.strings.get(s.name));
        break;
      case NameRoles::kOptimizer:
        add_interval(optimizer[s.tid], interval);
        break;
      case NameRoles::kBackward:
        add_interval(backward, interval);
        break;
      case NameRoles::kForwardAlways:
      case NameRoles::kForwardIfOp:
      case NameRoles::kForwardIfRange:
        if (counts_as_forward(s.kind, role)) add_interval(forward_of(s.tid), interval);
        break;
      case NameRoles::kNone:
        break;
    }
  }

  // "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" -> "_SingleProcessDataLoaderIter"
  static std::string iterator_class(std::string_view name) {
    std::string_view rest = name.substr(kDataWaitPrefix.size());
    return std::string(rest.substr(0, rest.find('.')));
  }

 private:
  // Operators but profiler steps, and user ranges that say "forward".
  static bool counts_as_forward(SpanKind kind, NameRoles::Role role) {
    if (role == NameRoles::kForwardAlways) return true;
    return kind == SpanKind::kCpuOp ? role == NameRoles::kForwardIfOp : role == NameRoles::kForwardIfRange;
  }
  // Consecutive ranges are mostly on one thread: its list is remembered.
  Intervals& forward_of(int64_t tid) {
    if (!last_forward_ || last_forward_tid_ != tid) {
      last_forward_ = &forward[tid];
      last_forward_tid_ = tid;
    }
    return *last_forward_;
  }
  Intervals* last_forward_ = nullptr;  // std::map keeps it valid
  int64_t last_forward_tid_ = 0;
};

void merge_all(std::map<int64_t, Intervals>& by_thread) {
  for (auto& [tid, intervals] : by_thread) intervals = merge_unsorted(std::move(intervals));
}

Intervals clip_thread(const std::map<int64_t, Intervals>& by_thread, int64_t tid, int64_t start, int64_t end) {
  auto it = by_thread.find(tid);
  return it == by_thread.end() ? Intervals{} : clip_disjoint(it->second, start, end);
}

// A trace's phases claim time in the order data wait, optimizer, backward,
// forward: forward is a loose range (the operators before the first backward
// one), so the precise phases claim first.
void fill_trace_phases(StepRecord& step, const ProcessRanges& ranges) {
  auto phase = [&](StepPhase p) -> int64_t& { return step.phase_ns[static_cast<size_t>(p)]; };
  Intervals backward = clip_disjoint(ranges.backward, step.start_ns, step.end_ns);
  // Forward: the step thread's operators before the first backward operator.
  int64_t forward_end = backward.empty() ? step.end_ns : backward.front().start_ns;
  PhaseClaims claims;
  phase(StepPhase::kDataWait) = claims.claim(clip_thread(ranges.data_wait, step.tid, step.start_ns, step.end_ns));
  phase(StepPhase::kOptimizer) = claims.claim(clip_thread(ranges.optimizer, step.tid, step.start_ns, step.end_ns));
  phase(StepPhase::kBackward) = claims.claim(backward);
  phase(StepPhase::kForward) = claims.claim(clip_thread(ranges.forward, step.tid, step.start_ns, forward_end));
  int64_t measured = 0;
  for (size_t i = 0; i + 1 < kStepPhaseCount; ++i) measured += step.phase_ns[i];
  phase(StepPhase::kOther) = std::max<int64_t>(0, step.time_ns() - measured);
}

// The complete ranges of one process: of two or more distinct step names the
// last is left out.
std::vector<const Span*> complete_ranges(std::vector<const Span*> ranges, bool& last_left_out) {
  std::set<StringId> names;
  for (const Span* s : ranges) names.insert(s->name);
  last_left_out = names.size() >= 2;
  if (last_left_out) ranges.pop_back();
  return ranges;
}

}  // namespace

bool is_data_wait_range(std::string_view name) {
  return name.starts_with(kDataWaitPrefix) && name.size() > kDataWaitPrefix.size();
}

bool is_optimizer_range(std::string_view name) {
  return name.starts_with("Optimizer.step#") || name.starts_with("Optimizer.zero_grad#");
}

bool is_backward_op(std::string_view name) {
  return name.starts_with("autograd::engine::evaluate_function") || name.find("Backward") != std::string_view::npos;
}

std::vector<TraceProcessSteps> trace_steps(const Run& run) { return trace_steps(run, profiler_step_spans(run)); }

std::vector<TraceProcessSteps> trace_steps(const Run& run, const std::vector<const Span*>& profiler_steps) {
  std::map<int64_t, std::vector<const Span*>> ranges_by_pid;
  for (const Span* s : profiler_steps) ranges_by_pid[s->pid].push_back(s);
  if (ranges_by_pid.empty()) return {};
  std::map<int64_t, ProcessRanges> phase_ranges;
  NameRoles roles(run.strings);
  // Consecutive spans are mostly of one process: its ranges are remembered.
  int64_t last_pid = 0;
  ProcessRanges* last_ranges = nullptr;
  bool have_last = false;
  for (const Span& s : run.spans) {
    if ((s.kind != SpanKind::kCpuOp && s.kind != SpanKind::kUserRange) || s.end_ns < s.start_ns) continue;
    if (!have_last || s.pid != last_pid) {
      last_pid = s.pid;
      last_ranges = ranges_by_pid.count(s.pid) ? &phase_ranges[s.pid] : nullptr;
      have_last = true;
    }
    if (last_ranges) last_ranges->add(run, s, roles.role(s.name));
  }
  std::vector<TraceProcessSteps> out;
  for (auto& [pid, ranges] : ranges_by_pid) {
    ProcessRanges& phases = phase_ranges[pid];
    merge_all(phases.data_wait);
    merge_all(phases.optimizer);
    merge_all(phases.forward);
    phases.backward = merge_unsorted(std::move(phases.backward));
    TraceProcessSteps& p = out.emplace_back();
    p.pid = pid;
    p.ranges = ranges.size();
    p.loader_iterator = phases.loader_iterator;
    for (const Span* range : complete_ranges(ranges, p.last_left_out)) {
      StepRecord& step = p.steps.emplace_back();
      step.start_ns = range->start_ns;
      step.end_ns = range->end_ns;
      step.tid = range->tid;
      fill_trace_phases(step, phases);
    }
    if (p.steps.empty()) out.pop_back();
  }
  return out;
}

}  // namespace stepscope
