#include "importers/flow_binding.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <exception>
#include <limits>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analyses/nearly_sorted.hpp"

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
  for (uint32_t t = queue.take(); t != kNoTrack; t = queue.take()) {
    ends.clear();
    for (uint32_t i = end_groups.begin[t]; i < end_groups.begin[t + 1]; ++i) {
      const FlowEndpoint& end = endpoints[end_groups.order[i]];
      ends.push_back(EndKey{end.ts_ns, end_groups.order[i], end.binds_enclosing});
    }
    uint32_t* slices = span_groups.order.data() + span_groups.begin[t];
    size_t slice_count = span_groups.begin[t + 1] - span_groups.begin[t];
    // Kineto writes most tracks in time order, with a few items out of place
    // (and a trace of several profiling windows in a stretch per window).
    sort_nearly_sorted(std::span<uint32_t>(slices, slice_count), slice_less);
    sort_nearly_sorted(std::span<EndKey>(ends), EndLess{});
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

// A bound endpoint's flow as a key that sorts as the flow's (kind, whether
// the id is text, id) do, with the endpoint's place in the trace: 16 bytes
// to sort instead of the 48 of an endpoint.
struct FlowKey {
  uint64_t id;     // the id with its sign bit flipped: unsigned order is signed order
  uint32_t group;  // the rank of (kind, id_is_text) among the trace's
  uint32_t index;  // in the endpoints
};

// The rank of each (kind, id_is_text) among those of the bound endpoints, in
// their order. Endpoints come in runs of one kind: the last is remembered.
class FlowGroups {
 public:
  explicit FlowGroups(const std::vector<FlowEndpoint>& endpoints) {
    for (const FlowEndpoint& e : endpoints) {
      if (e.bound != kNoSpan) note(e);
    }
    std::sort(groups_.begin(), groups_.end());
    for (uint32_t rank = 0; rank < groups_.size(); ++rank) rank_[groups_[rank]] = rank;
    last_ = kNoGroup;
  }

  uint32_t rank(const FlowEndpoint& e) {
    uint64_t group = group_of(e);
    if (group != last_) {
      last_ = group;
      last_rank_ = rank_.at(group);
    }
    return last_rank_;
  }

 private:
  static constexpr uint64_t kNoGroup = std::numeric_limits<uint64_t>::max();
  static uint64_t group_of(const FlowEndpoint& e) { return (uint64_t{e.kind} << 1) | uint64_t{e.id_is_text}; }
  void note(const FlowEndpoint& e) {
    uint64_t group = group_of(e);
    if (group == last_) return;
    last_ = group;
    if (rank_.try_emplace(group, 0).second) groups_.push_back(group);
  }

  std::vector<uint64_t> groups_;
  std::unordered_map<uint64_t, uint32_t> rank_;
  uint64_t last_ = kNoGroup;
  uint32_t last_rank_ = 0;
};

// The bound endpoints' keys, sorted by flow, then trace order: a stable
// least-significant-digit radix sort, one pass per byte of the key that
// differs between keys (a few for a trace's ids), whatever the order they
// come in. (Kineto writes some flows' starts in descending id order, which
// defeats sorts that look for ascending runs.)
std::vector<FlowKey> sorted_flow_keys(const std::vector<FlowEndpoint>& endpoints, size_t bound) {
  FlowGroups groups(endpoints);
  std::vector<FlowKey> keys;
  keys.reserve(bound);
  for (uint32_t i = 0; i < endpoints.size(); ++i) {
    const FlowEndpoint& e = endpoints[i];
    if (e.bound == kNoSpan) continue;
    keys.push_back({static_cast<uint64_t>(e.id) ^ (uint64_t{1} << 63), groups.rank(e), i});
  }
  // Bytes from the least significant: the id's eight, then the group's four.
  constexpr size_t kDigits = 12;
  auto digit = [](const FlowKey& key, size_t d) -> uint8_t {
    return static_cast<uint8_t>(d < 8 ? key.id >> (8 * d) : key.group >> (8 * (d - 8)));
  };
  std::vector<std::array<uint32_t, 256>> counts(kDigits, std::array<uint32_t, 256>{});
  for (const FlowKey& key : keys) {
    for (size_t d = 0; d < kDigits; ++d) counts[d][digit(key, d)]++;
  }
  std::vector<FlowKey> buffer;
  for (size_t d = 0; d < kDigits; ++d) {
    std::array<uint32_t, 256>& count = counts[d];
    if (keys.empty() || count[digit(keys.front(), d)] == keys.size()) continue;  // one value: in order already
    if (buffer.empty()) buffer.resize(keys.size());
    uint32_t next = 0;
    for (uint32_t& c : count) next += std::exchange(c, next);  // each value's first place
    for (const FlowKey& key : keys) buffer[count[digit(key, d)]++] = key;
    keys.swap(buffer);
  }
  return keys;
}

// One flow's bound endpoints: starts first, each in time order, then trace order.
struct FlowMember {
  int64_t ts_ns;
  uint32_t index;
  bool is_start;
  bool operator<(const FlowMember& other) const {
    if (is_start != other.is_start) return is_start;
    return std::tie(ts_ns, index) < std::tie(other.ts_ns, other.index);
  }
};

// Appends the flows of one flow's members (sorted); returns how many
// endpoints found no partner.
size_t pair_flow(const std::vector<FlowEndpoint>& endpoints, const std::vector<FlowMember>& members,
                 std::vector<Flow>& flows) {
  size_t starts = 0;
  while (starts < members.size() && members[starts].is_start) ++starts;
  if (starts == 0 || starts == members.size()) return members.size();
  // One start may feed several ends (one launch, several kernels); an end
  // pairs with the latest start at or before it, else with the first.
  size_t s = 0;
  for (size_t f = starts; f < members.size(); ++f) {
    while (s + 1 < starts && members[s + 1].ts_ns <= members[f].ts_ns) ++s;
    const FlowEndpoint& end = endpoints[members[f].index];
    flows.push_back(Flow{endpoints[members[s].index].bound, end.bound, end.kind});
  }
  return 0;
}

}  // namespace

FlowBindingCounts bind_flows(const std::vector<Span>& spans, FlowTracks tracks, std::vector<FlowEndpoint>& endpoints,
                             std::vector<Flow>& flows, bool two_threads) {
  FlowBindingCounts counts;
  if (endpoints.empty()) return counts;  // spares ordering every span
  for (uint32_t i = 0; i < endpoints.size(); ++i) endpoints[i].index = i;
  bind_endpoints(spans, std::move(tracks), endpoints, two_threads);
  size_t bound = 0;
  for (const FlowEndpoint& e : endpoints) bound += e.bound != kNoSpan;
  counts.unbound = endpoints.size() - bound;
  std::vector<FlowKey> keys = sorted_flow_keys(endpoints, bound);
  std::vector<FlowMember> members;
  for (size_t begin = 0; begin < keys.size();) {
    members.clear();
    size_t end = begin;
    for (; end < keys.size() && keys[end].id == keys[begin].id && keys[end].group == keys[begin].group; ++end) {
      const FlowEndpoint& e = endpoints[keys[end].index];
      members.push_back({e.ts_ns, keys[end].index, e.is_start});
    }
    std::sort(members.begin(), members.end());
    counts.unpaired += pair_flow(endpoints, members, flows);
    begin = end;
  }
  return counts;
}

}  // namespace stepscope
