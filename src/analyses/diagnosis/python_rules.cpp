// python_overhead: the step is paced by the host's per-operator cost, not by
// arithmetic. Many tiny operators each pay the Python interpreter between
// them, argument parsing, dispatch and autograd bookkeeping; the device (if
// any) idles while the host issues them one by one.
//
// Read from a trace's operators (torch.profiler / Kineto spans), never from
// samples: the sampler sees Python frames only, so time inside a native
// operator shows as the Python line that called it, and samples cannot tell
// the interpreter's time from the operator's. Definitions and thresholds:
// docs/diagnosis.md, "python_overhead".
#include <algorithm>
#include <map>
#include <span>

#include <fmt/format.h>

#include "analyses/device/activity.hpp"
#include "analyses/device/gpu.hpp"
#include "analyses/diagnosis/rules.hpp"
#include "analyses/spans/span_index.hpp"
#include "analyses/steps/profiler_steps.hpp"
#include "analyses/steps/trace_steps.hpp"

namespace stepscope {

namespace {

// The gaps of disjoint, sorted `busy` inside [start, end).
Intervals gaps(const Intervals& busy, int64_t start, int64_t end) {
  Intervals out;
  int64_t at = start;
  for (const Interval& b : clip_disjoint(busy, start, end)) {
    if (b.start_ns > at) out.push_back({at, b.start_ns});
    at = std::max(at, b.end_ns);
  }
  if (at < end) out.push_back({at, end});
  return out;
}

// Annotations that torch writes as ranges (user_annotation, or cpu ops in
// the legacy profiler): they cover Python code, so they are not operators.
bool is_annotation(std::string_view name) {
  return is_profiler_step_name(name) || is_data_wait_range(name) || is_optimizer_range(name);
}

// The host side of the main process that the rule reads: the step thread's
// and the backward threads' operators and runtime calls, the data waits,
// and the step thread's Python functions (with_stack traces).
struct HostSpans {
  std::map<int64_t, std::vector<const Span*>> ops_by_thread;  // operators, by start then longest first, then trace order
  Intervals busy;       // operators, runtime calls and data waits, merged
  std::vector<const Span*> python;  // Python functions of the step thread, by start
};

// What the rule asks of a span's name, decided once per name rather than
// by string searches on each of millions of spans.
class NameFacts {
 public:
  explicit NameFacts(const StringTable& strings) : strings_(strings), facts_(strings.size(), kUnknown) {}
  bool data_wait_range(StringId name) { return get(name) & kDataWaitRange; }
  bool annotation(StringId name) { return get(name) & kAnnotation; }
  bool backward_op(StringId name) { return get(name) & kBackwardOp; }

 private:
  static constexpr uint8_t kDataWaitRange = 1, kAnnotation = 2, kBackwardOp = 4, kUnknown = 0x80;
  uint8_t get(StringId name) {
    uint8_t& facts = facts_[name];
    if (facts == kUnknown) {
      std::string_view text = strings_.get(name);
      facts = static_cast<uint8_t>((is_data_wait_range(text) ? kDataWaitRange : 0) |
                                   (is_annotation(text) ? kAnnotation : 0) | (is_backward_op(text) ? kBackwardOp : 0));
    }
    return facts;
  }
  const StringTable& strings_;
  std::vector<uint8_t> facts_;  // by string id
};

bool runs_backward(const Run& run, std::span<const HostSpan> spans, NameFacts& names) {
  return std::any_of(spans.begin(), spans.end(), [&](const HostSpan& host) {
    const Span& s = run.spans[host.id];
    return s.kind == SpanKind::kCpuOp && names.backward_op(s.name);
  });
}

// Walks the host spans of the process's threads in nesting order (the
// index's), so the operators and Python functions come out sorted, and each
// thread's busy time is a union of intervals by start.
HostSpans host_spans(const Run& run, int64_t pid, int64_t step_tid, const HostSpansByThread& index) {
  NameFacts names(run.strings);
  HostSpans out;
  Intervals busy;  // the threads' unions, one after another
  for (const HostSpansByThread::Thread& thread : index.threads()) {
    if (thread.pid != pid) continue;
    bool step_thread = thread.tid == step_tid;
    if (!step_thread && !runs_backward(run, thread.spans, names)) continue;
    SortedUnion thread_busy(thread.spans.size());
    std::vector<const Span*>* ops = nullptr;
    for (const HostSpan& host : thread.spans) {
      const Span& s = run.spans[host.id];
      if (s.end_ns < s.start_ns) continue;
      bool range = s.kind == SpanKind::kUserRange || s.kind == SpanKind::kCpuOp;
      if (s.kind == SpanKind::kDataWait || (range && names.data_wait_range(s.name))) {
        if (step_thread) thread_busy.add({s.start_ns, s.end_ns});
      } else if (s.kind == SpanKind::kCpuOp && !names.annotation(s.name)) {
        if (!ops) {
          ops = &out.ops_by_thread[s.tid];
          // Room for all of the thread's spans: pages are touched only as
          // pointers fill them, where regrowing would copy and touch twice.
          ops->reserve(thread.spans.size());
        }
        ops->push_back(&s);
        thread_busy.add({s.start_ns, s.end_ns});
      } else if (s.kind == SpanKind::kRuntimeCall) {
        thread_busy.add({s.start_ns, s.end_ns});
      } else if (s.kind == SpanKind::kPythonFunction && step_thread) {
        out.python.push_back(&s);
      }
    }
    Intervals unions = thread_busy.take();
    busy.insert(busy.end(), unions.begin(), unions.end());
  }
  out.busy = merge_unsorted(std::move(busy));
  return out;
}

// What the steady steps show.
struct OverheadFigures {
  size_t steps = 0;
  int64_t step_ns = 0;
  int64_t gap_ns = 0;      // gaps under kLongGapNs with no operator, runtime call or data wait on the step's threads
  int64_t tiny_op_ns = 0;  // top-level operators shorter than kTinyOpNs
  int64_t stall_ns = 0;    // long gaps, and operators' excess over kStallFactor x their name's median
  std::vector<int64_t> top_level_op_ns;
  bool has_device = false;
  int64_t device_busy_ns = 0;
  std::map<StringId, int64_t> gap_by_python_function;  // innermost Python function around each gap
  int64_t working_ns() const { return step_ns - stall_ns; }
};

// Top-level operators (not inside another operator of their thread) that
// start inside [start, end).
void add_top_level_ops(const std::vector<const Span*>& ops, int64_t start, int64_t end,
                       std::vector<const Span*>& into) {
  auto it = std::lower_bound(ops.begin(), ops.end(), start, [](const Span* s, int64_t t) { return s->start_ns < t; });
  int64_t open_until = INT64_MIN;
  for (; it != ops.end() && (*it)->start_ns < end; ++it) {
    if ((*it)->start_ns < open_until) continue;
    into.push_back(*it);
    open_until = (*it)->end_ns;
  }
}

// A trace without device activity that still launched work on a device
// (runtime calls) or ran collectives through a GPU library (nccl:, rccl:)
// lost its device side: whether the device idled cannot be told.
bool device_side_missing(const Run& run, const SpanCensus& census) {
  if (census.count(SpanKind::kKernel) + census.count(SpanKind::kMemcpy) + census.count(SpanKind::kMemset) > 0) {
    return false;
  }
  if (census.count(SpanKind::kRuntimeCall) > 0) return true;
  for (const Span& s : run.spans) {
    if (s.kind != SpanKind::kUserRange && s.kind != SpanKind::kCpuOp) continue;
    const std::string& name = run.strings.get(s.name);
    if (name.starts_with("nccl:") || name.starts_with("rccl:")) return true;
  }
  return false;
}

int64_t median(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// On the CPU (no device in the trace), an operator that is usually tiny
// (its name's median under kTinyOpNs) but took over kStallFactor x that and
// at least kLongGapNs more was mostly not running: the thread was preempted
// inside it (a shared machine). Its excess is a stall, the rest counts as it
// is. Not with a device: there a usually tiny operator (aten::to, aten::item)
// that takes long is waiting for the device, which is real step time.
// (Names are indexes into tables by string id: a trace's half a million
// top-level operators have a few hundred names.)
void add_op_times(const std::vector<const Span*>& top_level, size_t strings, OverheadFigures& f) {
  std::vector<std::vector<int64_t>> by_name(strings);
  size_t first = f.top_level_op_ns.size();
  f.top_level_op_ns.reserve(first + top_level.size());
  for (const Span* op : top_level) {
    int64_t ns = op->end_ns - op->start_ns;
    by_name[op->name].push_back(ns);
    f.top_level_op_ns.push_back(ns);
  }
  std::vector<int64_t> usual(strings, 0);
  for (StringId name = 0; name < strings; ++name) {
    if (!by_name[name].empty()) usual[name] = median(std::move(by_name[name]));
  }
  for (size_t i = 0; i < top_level.size(); ++i) {
    int64_t ns = f.top_level_op_ns[first + i];
    StringId name = top_level[i]->name;
    int64_t excess = ns - kStallFactor * usual[name];
    if (!f.has_device && usual[name] < kTinyOpNs && excess >= kLongGapNs) f.stall_ns += excess;
    if (ns < kTinyOpNs) f.tiny_op_ns += ns;
  }
}

// The innermost Python function around `gap` (spans nest; of those that
// contain it, the one that starts last). Looks back a bounded distance.
const Span* innermost_python(const std::vector<const Span*>& python, const Interval& gap) {
  auto it = std::upper_bound(python.begin(), python.end(), gap.start_ns,
                             [](int64_t t, const Span* s) { return t < s->start_ns; });
  for (size_t looked = 0; it != python.begin() && looked < 256; ++looked) {
    --it;
    if ((*it)->end_ns >= gap.end_ns) return *it;
  }
  return nullptr;
}

OverheadFigures overhead_figures(const DiagnosisInput& in, const DiagnosisFacts& facts) {
  const Run& run = in.run;
  OverheadFigures f;
  HostSpans host = host_spans(run, facts.primary->pid, facts.main_tid, *in.host_spans);  // diagnose sees to host_spans
  const Intervals& device = facts.device_busy;
  f.has_device = !device.empty();
  const std::vector<StepRecord>& steps = facts.primary->steps;
  std::vector<const Span*> top_level;
  size_t all_ops = 0;  // at most all of them are top-level: reserved, not touched
  for (const auto& [tid, thread_ops] : host.ops_by_thread) all_ops += thread_ops.size();
  top_level.reserve(all_ops);
  for (size_t i = facts.primary->warmup_steps; i < steps.size(); ++i) {
    const StepRecord& step = steps[i];
    if (step.tid != facts.main_tid) continue;
    ++f.steps;
    f.step_ns += step.time_ns();
    for (const Interval& gap : gaps(host.busy, step.start_ns, step.end_ns)) {
      int64_t ns = gap.end_ns - gap.start_ns;
      // A millisecond with no operator is no per-operator cost: the thread
      // was blocked (on the autograd engine, a lock, I/O), preempted, or ran
      // long Python work of its own (which the sampler attributes better).
      if (ns >= kLongGapNs) {
        f.stall_ns += ns;
        continue;
      }
      f.gap_ns += ns;
      if (const Span* function = innermost_python(host.python, gap)) f.gap_by_python_function[function->name] += ns;
    }
    for (const auto& [tid, ops] : host.ops_by_thread) add_top_level_ops(ops, step.start_ns, step.end_ns, top_level);
    f.device_busy_ns += total_length(clip_disjoint(device, step.start_ns, step.end_ns));
  }
  add_op_times(top_level, run.strings.size(), f);
  return f;
}

double fraction(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

std::string python_functions_text(const Run& run, const OverheadFigures& f) {
  std::vector<std::pair<StringId, int64_t>> sorted(f.gap_by_python_function.begin(), f.gap_by_python_function.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text = "Python between operators, by the innermost Python function (with_stack): ";
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("{} {}", run.strings.get(sorted[i].first), percent_text(fraction(sorted[i].second, f.gap_ns)));
  }
  return text + " of that time";
}

}  // namespace

const char* const kPythonOverheadRemedy =
    "Give each operator more work: larger batches; replace Python loops of small tensor operations with one "
    "operation over a stacked tensor; fuse the rest with torch.compile; use foreach or fused optimizers; on a "
    "GPU, CUDA graphs (torch.compile(mode=\"reduce-overhead\")) remove the per-launch host cost.";

std::optional<Finding> python_overhead_rule(const DiagnosisInput& in, const DiagnosisFacts& facts) {
  // A recording has no operator spans; with native frames its samples tell.
  if (in.run.metadata_int("native_stacks") == 1) return recorded_python_overhead(in, facts);
  // diagnose sees to host_spans, and with them the census
  if (!facts.primary || device_side_missing(in.run, in.host_spans->census())) return std::nullopt;
  OverheadFigures f = overhead_figures(in, facts);
  if (f.steps == 0 || f.step_ns <= 0) return std::nullopt;
  double ops_per_step = static_cast<double>(f.top_level_op_ns.size()) / static_cast<double>(f.steps);
  int64_t median_op_ns = median(f.top_level_op_ns);
  if (ops_per_step < static_cast<double>(kMinOpsPerStep) || median_op_ns >= kTinyOpNs) return std::nullopt;
  // Of the time the step's threads worked: stalls are not the program's.
  double host_share = fraction(f.gap_ns + f.tiny_op_ns, f.working_ns());
  // With a device, host overhead costs step time only while the device idles.
  double device_idle = 1 - fraction(f.device_busy_ns, f.step_ns);
  double share = f.has_device ? std::min(host_share, device_idle) : host_share;
  if (share < kPythonOverheadShare) return std::nullopt;
  Finding out = time_finding("python_overhead", share);
  out.title = fmt::format("Python overhead: {} of step time is the host's per-operator cost, not arithmetic",
                          percent_text(share));
  out.evidence.push_back(fmt::format(
      "{:.0f} top-level operators per step, median {:.1f} us each ({} steady steps of {:.1f} ms on average)",
      ops_per_step, static_cast<double>(median_op_ns) / 1e3, f.steps,
      static_cast<double>(f.step_ns) / static_cast<double>(f.steps) / 1e6));
  out.evidence.push_back(fmt::format(
      "of the time the step's threads work, {} is spent between operators (the Python interpreter, gaps under "
      "{} ms) and {} in operators shorter than {} us (dispatch and bookkeeping, next to no arithmetic)",
      percent_text(fraction(f.gap_ns, f.working_ns())), kLongGapNs / 1'000'000,
      percent_text(fraction(f.tiny_op_ns, f.working_ns())), kTinyOpNs / 1000));
  if (fraction(f.stall_ns, f.step_ns) >= 0.05) {
    out.evidence.push_back(fmt::format(
        "{} of step time is stalls, left out of that time: gaps of {} ms or more with no operator{}",
        percent_text(fraction(f.stall_ns, f.step_ns)), kLongGapNs / 1'000'000,
        f.has_device ? "" : fmt::format(", and usually tiny operators' time beyond {}x their median (preemption on a "
                                        "shared machine)", kStallFactor)));
  }
  if (f.has_device) {
    out.evidence.push_back(fmt::format("the device is busy {} of step time: it waits for the host",
                                       percent_text(fraction(f.device_busy_ns, f.step_ns))));
  } else {
    out.evidence.push_back(
        "no device activity in the trace: the operators run on the CPU, so their overhead adds straight to "
        "step time");
  }
  if (!f.gap_by_python_function.empty()) out.evidence.push_back(python_functions_text(in.run, f));
  out.recommendation = kPythonOverheadRemedy;
  return out;
}

}  // namespace stepscope
