#include "importers/flow_binding.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <exception>
#include <limits>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

namespace stepscope {

namespace {

constexpr SpanId kNoSpan = std::numeric_limits<SpanId>::max();
constexpr uint32_t kNoTrack = kNoFlowTrack;

// Items grouped by track with a counting sort: order[begin[t] .. begin[t+1])
// are track t's items, in their original order. Items of kNoTrack are left out.
struct ByTrack {
  std::vector<uint32_t> begin;
  std::vector<uint32_t> order;
};

ByTrack group_by_track(const std::vector<uint32_t>& track_of, size_t tracks) {
  ByTrack grouped;
  grouped.begin.assign(tracks + 1, 0);
  for (uint32_t track : track_of) {
    if (track != kNoTrack) ++grouped.begin[track + 1];
  }
  for (size_t t = 0; t < tracks; ++t) grouped.begin[t + 1] += grouped.begin[t];
  grouped.order.resize(grouped.begin[tracks]);
  std::vector<uint32_t> next(grouped.begin.begin(), grouped.begin.end() - 1);
  for (uint32_t item = 0; item < track_of.size(); ++item) {
    if (track_of[item] != kNoTrack) grouped.order[next[track_of[item]]++] = item;
  }
  return grouped;
}

// Sorts `items` by `less`, cheaply when they come in a few ascending runs:
// Kineto writes most tracks in time order, with a few items out of place
// (and a trace of several profiling windows is a run per window), so the
// runs are merged pairwise instead of sorting all.
template <typename T, typename Less>
void sort_runs(T* items, size_t count, Less less, std::vector<size_t>& bounds) {
  bounds.assign(1, 0);
  for (size_t i = 1; i < count; ++i) {
    if (less(items[i], items[i - 1])) bounds.push_back(i);
  }
  bounds.push_back(count);
  if (bounds.size() > 2 + count / 16) {  // many short runs: sorting is cheaper
    std::sort(items, items + count, less);
    return;
  }
  while (bounds.size() > 2) {
    size_t runs = bounds.size() - 1;
    size_t kept = 1;
    for (size_t k = 0; k < runs; k += 2) {
      if (k + 1 < runs) std::inplace_merge(items + bounds[k], items + bounds[k + 1], items + bounds[k + 2], less);
      bounds[kept++] = bounds[std::min(k + 2, runs)];
    }
    bounds.resize(kept);
  }
}

struct EndKey {
  int64_t ts_ns;
  uint32_t index;  // in the endpoints
  bool binds_enclosing;
};

struct EndLess {
  bool operator()(const EndKey& a, const EndKey& b) const {
    return std::tie(a.ts_ns, a.index) < std::tie(b.ts_ns, b.index);
  }
};

// Binds the endpoints of one track (`ends`, in time order) to its slices
// (span ids by start, outer (longer) slices first), by one sweep with a
// stack of the slices open at the current time.
void bind_track(const std::vector<Span>& spans, const uint32_t* slices, size_t slice_count,
                const std::vector<EndKey>& ends, std::vector<FlowEndpoint>& endpoints, std::vector<SpanId>& open) {
  open.clear();
  size_t next = 0;
  for (const EndKey& end : ends) {
    if (!end.binds_enclosing) {
      // The next slice: the first starting at or after the endpoint.
      const uint32_t* found = std::lower_bound(slices, slices + slice_count, end.ts_ns,
                                               [&](uint32_t id, int64_t ts) { return spans[id].start_ns < ts; });
      if (found != slices + slice_count) endpoints[end.index].bound = *found;
      continue;
    }
    for (; next < slice_count && spans[slices[next]].start_ns <= end.ts_ns; ++next) {
      int64_t start = spans[slices[next]].start_ns;
      while (!open.empty() && spans[open.back()].end_ns < start) open.pop_back();
      open.push_back(slices[next]);
    }
    while (!open.empty() && spans[open.back()].end_ns < end.ts_ns) open.pop_back();
    if (!open.empty()) endpoints[end.index].bound = open.back();
  }
}

// Runs `first` on a second thread and `second` on this one (both here, one
// after the other, when no thread can be started).
template <typename First, typename Second>
void side_by_side(First first, Second second) {
  std::exception_ptr error;
  {
    std::jthread helper;
    try {
      helper = std::jthread([&] {
        try {
          first();
        } catch (...) {
          error = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      first();
    }
    second();
  }  // joined here, also when second() throws
  if (error) std::rethrow_exception(error);
}

// The tracks with endpoints, largest first (slices and endpoints to
// order), handed out one at a time to whichever thread is free: tracks are
// independent, and a few large ones (a thread's operators, a busy stream)
// hold most of the work.
class TrackQueue {
 public:
  TrackQueue(const ByTrack& span_groups, const ByTrack& end_groups) {
    std::vector<std::pair<size_t, uint32_t>> by_work;  // (work, track)
    for (uint32_t t = 0; t + 1 < end_groups.begin.size(); ++t) {
      size_t ends = end_groups.begin[t + 1] - end_groups.begin[t];
      if (ends > 0) by_work.emplace_back(ends + span_groups.begin[t + 1] - span_groups.begin[t], t);
    }
    std::sort(by_work.begin(), by_work.end(), std::greater<>());
    for (const auto& [work, track] : by_work) tracks_.push_back(track);
  }

  // The next track to bind, or kNoTrack when all are taken.
  uint32_t take() {
    size_t at = next_.fetch_add(1, std::memory_order_relaxed);
    return at < tracks_.size() ? tracks_[at] : kNoTrack;
  }

 private:
  std::vector<uint32_t> tracks_;
  std::atomic<size_t> next_{0};
};

// Binds the endpoints of the tracks it takes from `queue` until none is left.
void bind_tracks(const std::vector<Span>& spans, ByTrack& span_groups, const ByTrack& end_groups, TrackQueue& queue,
                 std::vector<FlowEndpoint>& endpoints) {
  // By start, outer (longer) slices first, then trace order. The ids are
  // sorted in place (a track may hold a million slices: no copies of them).
  auto slice_less = [&](uint32_t a, uint32_t b) {
    const Span& x = spans[a];
    const Span& y = spans[b];
    return std::tie(x.start_ns, y.end_ns, a) < std::tie(y.start_ns, x.end_ns, b);
  };
  std::vector<EndKey> ends;
  std::vector<SpanId> open;
  std::vector<size_t> bounds;
  for (uint32_t t = queue.take(); t != kNoTrack; t = queue.take()) {
    ends.clear();
    for (uint32_t i = end_groups.begin[t]; i < end_groups.begin[t + 1]; ++i) {
      const FlowEndpoint& end = endpoints[end_groups.order[i]];
      ends.push_back(EndKey{end.ts_ns, end_groups.order[i], end.binds_enclosing});
    }
    uint32_t* slices = span_groups.order.data() + span_groups.begin[t];
    size_t slice_count = span_groups.begin[t + 1] - span_groups.begin[t];
    sort_runs(slices, slice_count, slice_less, bounds);
    sort_runs(ends.data(), ends.size(), EndLess{}, bounds);
    bind_track(spans, slices, slice_count, ends, endpoints, open);
  }
}

// Sets every endpoint's bound span (kNoSpan when none). Only tracks with
// endpoints are ordered, each on its own.
void bind_endpoints(const std::vector<Span>& spans, FlowTracks tracks, std::vector<FlowEndpoint>& endpoints,
                    bool two_threads) {
  ByTrack span_groups = group_by_track(tracks.of_spans, tracks.count);
  tracks.of_spans = {};  // spare its memory from here on
  ByTrack end_groups = group_by_track(tracks.of_endpoints, tracks.count);
  tracks.of_endpoints = {};
  for (FlowEndpoint& endpoint : endpoints) endpoint.bound = kNoSpan;

  // Each endpoint's `bound` is written by the one thread binding its track.
  TrackQueue queue(span_groups, end_groups);
  auto bind = [&] { bind_tracks(spans, span_groups, end_groups, queue, endpoints); };
  if (two_threads) {
    side_by_side(bind, bind);
  } else {
    bind();
  }
}

// A bound endpoint's place among its flow's: flows together, starts before
// ends, each in time order, then trace order.
// (A function object, so std::sort inlines it.)
struct FlowOrderLess {
  bool operator()(const FlowEndpoint& a, const FlowEndpoint& b) const {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.id_is_text != b.id_is_text) return a.id_is_text < b.id_is_text;
    if (a.id != b.id) return a.id < b.id;
    if (a.is_start != b.is_start) return a.is_start;  // starts first
    return std::tie(a.ts_ns, a.index) < std::tie(b.ts_ns, b.index);
  }
};

// With two threads: the endpoints are split around the median (in place,
// no merge buffer of half a million endpoints) and each half is sorted on
// its own thread. The order is total (trace order last), so the result is
// the one-thread order exactly.
void sort_by_flow(std::vector<FlowEndpoint>& endpoints, bool two_threads) {
  if (!two_threads) return std::sort(endpoints.begin(), endpoints.end(), FlowOrderLess{});
  auto middle = endpoints.begin() + static_cast<std::ptrdiff_t>(endpoints.size() / 2);
  std::nth_element(endpoints.begin(), middle, endpoints.end(), FlowOrderLess{});
  side_by_side([&] { std::sort(endpoints.begin(), middle, FlowOrderLess{}); },
               [&] { std::sort(middle, endpoints.end(), FlowOrderLess{}); });
}

bool same_flow(const FlowEndpoint& a, const FlowEndpoint& b) {
  return a.kind == b.kind && a.id_is_text == b.id_is_text && a.id == b.id;
}

}  // namespace

FlowBindingCounts bind_flows(const std::vector<Span>& spans, FlowTracks tracks, std::vector<FlowEndpoint>& endpoints,
                             std::vector<Flow>& flows, bool two_threads) {
  FlowBindingCounts counts;
  if (endpoints.empty()) return counts;  // spares ordering every span
  for (uint32_t i = 0; i < endpoints.size(); ++i) endpoints[i].index = i;
  bind_endpoints(spans, std::move(tracks), endpoints, two_threads);
  auto unbound = std::remove_if(endpoints.begin(), endpoints.end(),
                                [](const FlowEndpoint& e) { return e.bound == kNoSpan; });
  counts.unbound = static_cast<size_t>(endpoints.end() - unbound);
  endpoints.erase(unbound, endpoints.end());
  sort_by_flow(endpoints, two_threads);
  for (size_t begin = 0; begin < endpoints.size();) {
    size_t end = begin;
    while (end < endpoints.size() && same_flow(endpoints[end], endpoints[begin])) ++end;
    // One start may feed several ends (one launch, several kernels); an end
    // pairs with the latest start at or before it, else with the first.
    size_t starts_end = begin;
    while (starts_end < end && endpoints[starts_end].is_start) ++starts_end;
    if (starts_end == begin || starts_end == end) counts.unpaired += end - begin;
    size_t s = begin;
    for (size_t f = starts_end; f < end && starts_end > begin; ++f) {
      while (s + 1 < starts_end && endpoints[s + 1].ts_ns <= endpoints[f].ts_ns) ++s;
      flows.push_back(Flow{endpoints[s].bound, endpoints[f].bound, endpoints[f].kind});
    }
    begin = end;
  }
  return counts;
}

}  // namespace stepscope
