#include "analyses/spans/span_index.hpp"

#include <algorithm>
#include <memory>
#include <span>
#include <tuple>

#include "analyses/profile.hpp"
#include "util/nearly_sorted.hpp"

namespace stepscope {

namespace {

bool nesting_order(const HostSpan& a, const HostSpan& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
  return a.id < b.id;  // trace order, as a stable sort keeps it
}

}  // namespace

HostSpansByThread::HostSpansByThread(const Run& run) {
  // Two passes over the spans (millions of them, 64 bytes each): the census,
  // then each host span's sort key (24 bytes, kept: the passes of the
  // analyses read them in order) written straight to its thread's place. A
  // copy of the keys in trace order, moved by thread after one pass, would
  // take a second array as large, fresh pages at the report's peak.
  for (SpanId i = 0; i < run.spans.size(); ++i) census_.add(i, run.spans[i]);
  const std::vector<CensusTrack>& tracks = census_.tracks();
  // The tracks with host spans, by (pid, tid): the threads.
  std::vector<uint32_t> by_key;
  for (uint32_t i = 0; i < tracks.size(); ++i) {
    if (tracks[i].not_on_device() > 0) by_key.push_back(i);
  }
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(tracks[a].pid, tracks[a].tid) < std::tie(tracks[b].pid, tracks[b].tid);
  });
  std::vector<size_t> begin(by_key.size() + 1, 0);  // of each thread by rank
  for (size_t r = 0; r < by_key.size(); ++r) begin[r + 1] = begin[r] + tracks[by_key[r]].not_on_device();
  std::vector<size_t> next(tracks.size());  // by track number
  for (size_t r = 0; r < by_key.size(); ++r) next[by_key[r]] = begin[r];
  count_ = begin.back();
  spans_.reset(new HostSpan[count_]);
  std::span<HostSpan> entries(spans_.get(), count_);
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    // is_host_span, from the census's table of kinds
    if (census_.on_device(span.kind)) continue;
    entries[next[census_.track_number(span)]++] = {span.start_ns, span.end_ns, i};
  }
  // A thread's spans come in trace order, which is mostly time order. One
  // sort buffer serves all threads (fresh pages cost a fault each).
  std::vector<HostSpan> scratch;
  threads_.reserve(by_key.size());
  for (size_t r = 0; r < by_key.size(); ++r) {
    std::span<HostSpan> thread = entries.subspan(begin[r], begin[r + 1] - begin[r]);
    // A lambda, not the function's pointer: the sort's comparisons inline.
    sort_nearly_sorted(thread, [](const HostSpan& a, const HostSpan& b) { return nesting_order(a, b); }, scratch);
    const CensusTrack& track = tracks[by_key[r]];
    threads_.push_back({track.pid, track.tid, thread, track.host_work()});
  }
}

}  // namespace stepscope
