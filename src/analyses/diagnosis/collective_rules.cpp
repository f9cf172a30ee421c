// host_collectives: collectives that run on the host hold up the step. With
// torch.distributed's gloo backend (CPU training, or a CPU process group
// beside NCCL) a collective runs on the backend's own threads, which the
// profiler records as gloo:all_reduce, gloo:broadcast and kin; the step
// thread either computes meanwhile (DDP all-reduces buckets during backward)
// or runs no operator, waiting for the result. The share is the time a
// collective is in flight inside the steps while the step thread runs no
// operator. Collectives on a device (NCCL kernels) are
// communication_not_overlapped's.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"
#include "analyses/spans/intervals.hpp"
#include "analyses/spans/span_index.hpp"
#include "analyses/spans/string_match.hpp"

namespace stepscope {

namespace {

struct HostCollectives {
  Intervals in_steps;  // in flight inside the steps: disjoint, by start
  std::map<std::string, size_t> calls;  // collectives that began inside a step, by name
  std::set<int64_t> threads;
};

// The collectives of process `pid` (its rank: another process's collectives
// do not hold up its steps).
HostCollectives host_collectives(const Run& run, const HostSpansByThread& host_spans, int64_t pid,
                                 const Intervals& windows) {
  HostCollectives out;
  // Each name is tested once; most traces have no gloo span at all.
  const std::vector<bool> named = strings_starting_with(run.strings, "gloo:");
  if (std::find(named.begin(), named.end(), true) == named.end()) return out;
  Intervals spans;
  for (const HostSpansByThread::Thread& thread : host_spans.threads()) {
    if (thread.pid != pid) continue;
    for (const HostSpan& host : thread.spans) {
      const Span& s = run.spans[host.id];
      if (!named[s.name]) continue;
      spans.push_back({s.start_ns, s.end_ns});
      if (containing(windows, s.start_ns) == windows.end()) continue;
      ++out.calls[run.strings.get(s.name)];
      out.threads.insert(thread.tid);
    }
  }
  const Intervals merged = merge_unsorted(std::move(spans));
  for (const Interval& w : windows) {
    for (const Interval& part : clip_disjoint(merged, w.start_ns, w.end_ns)) out.in_steps.push_back(part);
  }
  return out;
}

// The step thread's operators, merged: when it computes.
Intervals step_thread_operators(const Run& run, const HostSpansByThread& host_spans, int64_t pid, int64_t tid) {
  Intervals ops;
  for (const HostSpansByThread::Thread& thread : host_spans.threads()) {
    if (thread.pid != pid || thread.tid != tid) continue;
    for (const HostSpan& host : thread.spans) {
      const Span& s = run.spans[host.id];
      if (s.kind == SpanKind::kCpuOp) ops.push_back({s.start_ns, s.end_ns});
    }
  }
  return merge_unsorted(std::move(ops));
}

}  // namespace

std::optional<Finding> host_collectives_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary) return std::nullopt;
  const Intervals steps = step_windows(in.run, f);
  const Intervals windows = merge_unsorted(steps);  // consecutive steps touch: one window
  const int64_t step_ns = total_length(windows);
  if (step_ns <= 0) return std::nullopt;
  HostCollectives comm = host_collectives(in.run, *in.host_spans, f.primary->pid, windows);  // diagnose sees to host_spans
  if (comm.in_steps.empty()) return std::nullopt;
  const Intervals ops = step_thread_operators(in.run, *in.host_spans, f.primary->pid, f.main_tid);
  const int64_t in_flight_ns = total_length(comm.in_steps);
  const int64_t exposed_ns = in_flight_ns - overlap_length(comm.in_steps, ops);
  const double share = static_cast<double>(exposed_ns) / static_cast<double>(step_ns);
  if (share < kHostCollectiveShare) return std::nullopt;

  const auto step_count = static_cast<double>(steps.size());
  size_t calls = 0;
  for (const auto& [name, count] : comm.calls) calls += count;
  Finding out = time_finding("host_collectives", share);
  out.title = fmt::format("Host collectives: the step thread waits {} of step time on collectives run by the CPU",
                          percent_text(share));
  auto plural = [](size_t n) { return n == 1 ? "" : "s"; };
  out.evidence.push_back(fmt::format("{} collective{} began in {} step{} ({:.1f} per step), on {} thread{}: {}", calls,
                                     plural(calls), steps.size(), plural(steps.size()),
                                     static_cast<double>(calls) / step_count, comm.threads.size(),
                                     plural(comm.threads.size()), top_counts(comm.calls, 3)));
  out.evidence.push_back(fmt::format(
      "collectives are in flight {:.1f} ms per step; the step thread (tid {}) runs no operator during {:.1f} ms "
      "per step of it",
      static_cast<double>(in_flight_ns) / step_count / 1e6, f.main_tid,
      static_cast<double>(exposed_ns) / step_count / 1e6));
  out.recommendation =
      "Communicate less often or overlap it: accumulate gradients over several micro-batches under DDP's no_sync() "
      "so that one all-reduce serves them all; let DDP all-reduce buckets during backward (bucket_cap_mb) rather "
      "than after it; on GPUs, use the NCCL backend, which runs collectives on the device. gloo runs over TCP: "
      "check the network between hosts, and GLOO_SOCKET_IFNAME for the interface it uses.";
  return out;
}

}  // namespace stepscope
