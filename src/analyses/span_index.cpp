#include "analyses/span_index.hpp"

#include <algorithm>
#include <memory>
#include <span>
#include <tuple>

#include "analyses/nearly_sorted.hpp"
#include "analyses/profile.hpp"

namespace stepscope {

namespace {

// A span's sort key held by value: sorting these is cache-friendly where a
// comparator reading run.spans[id] misses on every comparison.
struct Entry {
  int64_t start_ns;
  int64_t end_ns;
  SpanId span;
};

bool nesting_order(const Entry& a, const Entry& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
  return a.span < b.span;  // trace order, as a stable sort keeps it
}

}  // namespace

HostSpansByThread::HostSpansByThread(const Run& run) {
  // Two passes over the spans (millions of them, 64 bytes each): the census,
  // then each host span's sort key (24 bytes) written straight to its
  // thread's place. A copy of the keys in trace order, moved by thread
  // after one pass, would take a second array of keys as large, fresh pages
  // the size of every host span's key, at the report's peak.
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
  // Not zeroed first (as a vector's resize would): the pass writes every entry.
  std::unique_ptr<Entry[]> by_thread(new Entry[begin.back()]);
  std::span<Entry> entries(by_thread.get(), begin.back());
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    // is_host_span, from the census's table of kinds
    if (census_.on_device(span.kind)) continue;
    entries[next[census_.track_number(span)]++] = {span.start_ns, span.end_ns, i};
  }
  std::vector<Entry> scratch;
  // A thread's spans come in trace order, which is mostly time order. One
  // merge buffer serves all threads (fresh pages cost a fault each).
  for (size_t r = 0; r < by_key.size(); ++r) {
    sort_nearly_sorted(entries.subspan(begin[r], begin[r + 1] - begin[r]),
                       [](const Entry& a, const Entry& b) { return nesting_order(a, b); }, scratch);
  }
  scratch = {};
  // Only now: the sorts' buffers are gone, which keeps the peak lower.
  order_.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) order_[i] = entries[i].span;
  threads_.reserve(by_key.size());
  for (size_t r = 0; r < by_key.size(); ++r) {
    const CensusTrack& track = tracks[by_key[r]];
    threads_.push_back({track.pid, track.tid,
                        std::span<const SpanId>(order_).subspan(begin[r], begin[r + 1] - begin[r]),
                        track.host_work()});
  }
}

}  // namespace stepscope
