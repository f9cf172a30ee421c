// sync_in_loop: the host waits for the device inside the step. A
// synchronization (cudaStreamSynchronize and kin, which `.item()`, `.cpu()`,
// `.tolist()` and printing a tensor cause) stops the host from running ahead,
// so the device drains its queue and then waits for the next launches.
//
// Read from a trace's spans: each synchronizing runtime call on the host and
// the operator around it (the host is blocked in all of it: in
// `aten::_local_scalar_dense` the wait is mostly in the copy before the sync
// call itself); and the device's idle gap around the moment the host resumes,
// which is what the synchronization costs. A device that stays busy (a
// device-bound step) loses nothing to the host's waits, so the gap, not the
// host's blocked time, is the share.
#include <algorithm>
#include <functional>
#include <map>
#include <span>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"
#include "analyses/spans/intervals.hpp"
#include "analyses/spans/span_index.hpp"
#include "analyses/steps/profiler_steps.hpp"

namespace stepscope {

namespace {

// Synchronizing runtime calls by name, decided once per name rather than by
// a substring search per span.
class SyncCalls {
 public:
  explicit SyncCalls(const StringTable& strings) : is_sync_(strings.size(), -1), strings_(strings) {}
  bool operator()(const Span& s) {
    if (s.kind != SpanKind::kRuntimeCall) return false;
    int8_t& known = is_sync_[s.name];
    if (known < 0) known = is_sync_name(strings_.get(s.name));
    return known;
  }
  // Whether any name is a synchronizing call's: a few thousand names to
  // look at instead of millions of spans.
  bool any_named() const {
    for (StringId id = 0; id < strings_.size(); ++id) {
      if (is_sync_name(strings_.get(id))) return true;
    }
    return false;
  }

 private:
  static bool is_sync_name(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

  std::vector<int8_t> is_sync_;  // by string id: -1 not yet known
  const StringTable& strings_;
};

bool is_sync_site_span(SpanKind kind) {
  return kind == SpanKind::kCpuOp || kind == SpanKind::kUserRange || kind == SpanKind::kPythonFunction ||
         kind == SpanKind::kRuntimeCall;
}

// One synchronization: when the host was blocked, and where it was called.
struct SyncSite {
  int64_t start_ns = 0, end_ns = 0;
  std::string call;      // the runtime call
  std::string operator_; // the outermost operator around it (aten::item), or empty
  std::string range;     // the innermost user range or Python function around it, or empty
};

// Walks one thread's spans, in nesting order (of two spans with the same
// times, the trace's first is the parent), with a stack of the open ones.
void collect_thread_syncs(const Run& run, std::span<const HostSpan> spans, SyncCalls& is_sync_call,
                          std::vector<SyncSite>& out) {
  std::vector<const Span*> open;
  for (const HostSpan& host : spans) {
    const Span* s = &run.spans[host.id];
    if (!is_sync_site_span(s->kind)) continue;
    while (!open.empty() && open.back()->end_ns <= s->start_ns) open.pop_back();
    if (is_sync_call(*s)) {
      SyncSite site{s->start_ns, s->end_ns, run.strings.get(s->name), "", ""};
      const Span* innermost = nullptr;
      for (const Span* o : open) {
        const std::string& name = run.strings.get(o->name);
        if (is_profiler_step_name(name)) continue;
        if (o->kind == SpanKind::kCpuOp) {
          if (site.operator_.empty()) site.operator_ = name;
          innermost = o;
        } else if (o->kind == SpanKind::kUserRange || o->kind == SpanKind::kPythonFunction) {
          site.range = name;
        }
      }
      if (innermost) {
        // The innermost operator delivers the value: the host waits inside it.
        site.start_ns = innermost->start_ns;
        site.end_ns = innermost->end_ns;
        const std::string& name = run.strings.get(innermost->name);
        if (name != site.operator_) site.operator_ += " > " + name;
      }
      out.push_back(std::move(site));
      continue;
    }
    open.push_back(s);
  }
}

std::vector<SyncSite> sync_sites(const Run& run, const HostSpansByThread& host_spans) {
  SyncCalls is_sync_call(run.strings);
  std::vector<SyncSite> out;
  if (!is_sync_call.any_named()) return out;
  for (const HostSpansByThread::Thread& thread : host_spans.threads()) {
    collect_thread_syncs(run, thread.spans, is_sync_call, out);
  }
  return out;
}

// What a synchronization costs the device: its idle time from when both the
// host waited and the device had run dry, to the device's next activity,
// which must come within the step (`step_end`); empty when the device was
// busy as the host resumed. Idle time before the host waited is not the
// synchronization's doing (the host was late anyway).
std::optional<Interval> sync_idle_gap(const Intervals& busy, const SyncSite& sync, int64_t step_end) {
  auto next = std::upper_bound(busy.begin(), busy.end(), Interval{sync.end_ns, INT64_MAX});
  if (next != busy.begin() && std::prev(next)->end_ns > sync.end_ns) return std::nullopt;  // busy on resume
  if (next == busy.end() || next->start_ns >= step_end) return std::nullopt;
  int64_t start = next == busy.begin() ? sync.start_ns : std::max(sync.start_ns, std::prev(next)->end_ns);
  if (next->start_ns <= start) return std::nullopt;
  return Interval{start, next->start_ns};
}

}  // namespace

std::optional<Finding> sync_in_loop_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  std::vector<SyncSite> sites = sync_sites(in.run, *in.host_spans);  // diagnose sees to host_spans
  if (sites.empty()) return std::nullopt;
  Intervals steps = step_windows(in.run, f);
  Intervals windows = merge_unsorted(steps);  // consecutive steps touch: one window
  int64_t step_ns = total_length(windows);
  if (step_ns <= 0) return std::nullopt;
  // All device activity (facts.device_busy), not the device analyses' cut
  // (HTA's rule leaves out a cut-short last step): a synchronization's gap
  // ends at the device's next activity whichever step it belongs to.
  const Intervals& busy = f.device_busy;
  Intervals blocked, idle;
  std::map<std::string, size_t> calls, operators, ranges;
  for (const SyncSite& s : sites) {
    auto step = containing(steps, s.start_ns);
    if (step == steps.end()) continue;
    blocked.push_back({s.start_ns, s.end_ns});
    if (auto gap = sync_idle_gap(busy, s, step->end_ns)) idle.push_back(*gap);
    ++calls[s.call];
    if (!s.operator_.empty()) ++operators[s.operator_];
    if (!s.range.empty()) ++ranges[s.range];
  }
  if (blocked.empty() || busy.empty()) return std::nullopt;
  double share = static_cast<double>(total_length(merge_unsorted(idle))) / static_cast<double>(step_ns);
  if (share < kSyncShare) return std::nullopt;
  auto step_count = static_cast<double>(steps.size());
  double per_step_ms = static_cast<double>(step_ns) / step_count / 1e6;
  Finding out = time_finding("sync_in_loop", share);
  out.title = fmt::format("Synchronizations in the loop: the device idles {} of step time around them",
                          percent_text(share));
  out.evidence.push_back(fmt::format("{} synchronizations in {} steps ({:.1f} per step): {}", blocked.size(), steps.size(),
                                     static_cast<double>(blocked.size()) / step_count, top_counts(calls, 3)));
  out.evidence.push_back(fmt::format(
      "the host is blocked in them {:.1f} ms per step; the device idles {:.1f} ms per step because of them "
      "(from the end of its queue, once the host waits, to its next activity)",
      static_cast<double>(overlap_length(merge_unsorted(blocked), windows)) / step_count / 1e6,
      share * per_step_ms));
  if (!operators.empty()) out.evidence.push_back("inside " + top_counts(operators, 3));
  if (!ranges.empty()) out.evidence.push_back("under " + top_counts(ranges, 3));
  out.recommendation =
      "Keep values on the device inside the step: no .item(), .cpu(), .tolist(), printing of tensors or Python "
      "branches on tensor values; accumulate metrics as tensors and read them every N steps; copy to the host "
      "with non_blocking=True into pinned memory. torch.cuda.set_sync_debug_mode(\"warn\") finds the rest.";
  return out;
}

}  // namespace stepscope
