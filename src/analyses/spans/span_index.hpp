// Orders of a Run's spans that several analyses walk, built once per Run by
// `report` and shared, instead of each analysis sorting millions of spans
// again: the host spans of each thread in nesting order (ops, profile, the
// diagnosis' sync and Python rules), and the device activity joined to its
// runtime launches (ops, the device analyses).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "analyses/device/activity.hpp"
#include "analyses/spans/span_census.hpp"
#include "run/run.hpp"

namespace stepscope {

// A host span in the index: its id, with the times it is ordered by. The
// passes over a thread's spans find nesting from these, in order, without a
// look at the span itself (64 bytes, scattered over the Run).
struct HostSpan {
  int64_t start_ns;
  int64_t end_ns;
  SpanId id;
};

// The host spans (is_host_span) of each thread, threads ordered by (pid, tid)
// and each thread's spans by start, the longer first when they start
// together, then in trace order: the order in which an open-span stack
// recovers nesting, and the order torch's stable sorts give.
class HostSpansByThread {
 public:
  struct Thread {
    int64_t pid = 0;
    int64_t tid = 0;
    std::span<const HostSpan> spans;  // a part of all()
    size_t host_work = 0;  // its spans that are neither kOther nor on a device (CensusTrack::host_work)
  };

  explicit HostSpansByThread(const Run& run);
  // The threads' spans point into spans_: moving keeps them valid, copying would not.
  HostSpansByThread(const HostSpansByThread&) = delete;
  HostSpansByThread& operator=(const HostSpansByThread&) = delete;
  HostSpansByThread(HostSpansByThread&&) = default;
  HostSpansByThread& operator=(HostSpansByThread&&) = default;
  const std::vector<Thread>& threads() const { return threads_; }
  // Every thread's spans, thread after thread: an analysis may keep a table
  // parallel to it.
  std::span<const HostSpan> all() const { return {spans_.get(), count_}; }
  // Made in the same pass as the counts of each thread's spans.
  const SpanCensus& census() const { return census_; }

 private:
  // Not a vector: never zeroed, as the one pass that fills it writes every entry.
  std::unique_ptr<HostSpan[]> spans_;
  size_t count_ = 0;
  std::vector<Thread> threads_;
  SpanCensus census_;
};

struct SpanIndex {
  explicit SpanIndex(const Run& run) : host_spans(run), launches(run) {}
  HostSpansByThread host_spans;
  DeviceLaunches launches;
};

}  // namespace stepscope
