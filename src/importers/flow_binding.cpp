#include "importers/flow_binding.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <exception>
#include <limits>
#include <set>
#include <span>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

#include "util/nearly_sorted.hpp"

namespace stepscope {

namespace {

constexpr SpanId kNoSpan = std::numeric_limits<SpanId>::max();
constexpr uint32_t kNoTrack = kNoFlowTrack;

// Items of the wanted tracks grouped by track with a counting sort:
// order[begin[t] .. begin[t+1]) are track t's items, in their original order.
struct ByTrack {
  std::vector<uint32_t> begin;
  std::vector<uint32_t> order;
};

ByTrack group_by_track(const std::vector<uint32_t>& track_of, const std::vector<uint8_t>& wanted) {
  size_t tracks = wanted.size();
  auto is_wanted = [&](uint32_t track) { return track != kNoTrack && wanted[track]; };
  ByTrack grouped;
  grouped.begin.assign(tracks + 1, 0);
  for (uint32_t track : track_of) {
    if (is_wanted(track)) ++grouped.begin[track + 1];
  }
  for (size_t t = 0; t < tracks; ++t) grouped.begin[t + 1] += grouped.begin[t];
  grouped.order.resize(grouped.begin[tracks]);
  std::vector<uint32_t> next(grouped.begin.begin(), grouped.begin.end() - 1);
  for (uint32_t item = 0; item < track_of.size(); ++item) {
    if (is_wanted(track_of[item])) grouped.order[next[track_of[item]]++] = item;
  }
  return grouped;
}

struct EndKey {
  int64_t ts_ns;
  uint32_t index;  // in the endpoints
  bool binds_enclosing;
};
static_assert(sizeof(EndKey) == 16);

struct EndLess {
  bool operator()(const EndKey& a, const EndKey& b) const {
    return std::tie(a.ts_ns, a.index) < std::tie(b.ts_ns, b.index);
  }
};

// The rank of each (kind, id_is_text) among those of the endpoints, in
// the order of (kind, id_is_text). A trace has a few: they are found by a
// look along a short list (a set once there are many), the last one
// remembered, as endpoints come in runs of one kind.
class FlowGroups {
 public:
  // Each endpoint to rank, then `finish`, then `rank`.
  void add(const FlowEndpoint& e) {
    if (group_of(e) != last_) note(group_of(e));
  }
  void finish() {
    std::sort(groups_.begin(), groups_.end());
    last_ = kNoGroup;
  }

  size_t size() const { return groups_.size(); }
  uint32_t rank(const FlowEndpoint& e) {
    if (group_of(e) != last_) {
      last_ = group_of(e);
      last_rank_ = static_cast<uint32_t>(std::lower_bound(groups_.begin(), groups_.end(), last_) - groups_.begin());
    }
    return last_rank_;
  }

 private:
  static constexpr size_t kFewGroups = 16;
  static constexpr uint64_t kNoGroup = std::numeric_limits<uint64_t>::max();
  static uint64_t group_of(const FlowEndpoint& e) { return (uint64_t{e.kind} << 1) | uint64_t{e.id_is_text}; }

  void note(uint64_t group) {
    last_ = group;
    if (many_.empty()) {
      if (std::find(groups_.begin(), groups_.end(), group) != groups_.end()) return;
      groups_.push_back(group);
      if (groups_.size() > kFewGroups) many_.insert(groups_.begin(), groups_.end());
    } else if (many_.insert(group).second) {
      groups_.push_back(group);
    }
  }

  std::vector<uint64_t> groups_;  // distinct
  std::set<uint64_t> many_;       // the same, once there are more than a few
  uint64_t last_ = kNoGroup;
  uint32_t last_rank_ = 0;
};

// An id as an unsigned number in the same order.
uint64_t ordered_id(int64_t id) { return static_cast<uint64_t>(id) ^ (uint64_t{1} << 63); }

// What the keys of the flows need to know of the endpoints (those that may
// be bound: on a track with spans), gathered in the pass that orders them by
// track, which reads every endpoint anyway: their groups and the range of
// their ids.
struct FlowIds {
  FlowGroups groups;
  uint64_t least = std::numeric_limits<uint64_t>::max();
  uint64_t most = 0;
  void add(const FlowEndpoint& e) {
    groups.add(e);
    least = std::min(least, ordered_id(e.id));
    most = std::max(most, ordered_id(e.id));
  }
};

// The endpoints of each track in time order (then trace order): keys[begin[t]
// .. begin[t+1]) are track t's. Endpoints of kNoTrack are left out.
// Made in the one pass over the endpoints (a pass over a million endpoints
// costs memory bandwidth) that also gathers their flows' `ids`.
struct TrackEnds {
  std::vector<uint32_t> begin;
  std::vector<EndKey> keys;
  std::span<const EndKey> of(uint32_t track) const {
    return std::span<const EndKey>(keys).subspan(begin[track], begin[track + 1] - begin[track]);
  }
};

TrackEnds ends_by_track(const std::vector<uint32_t>& track_of, size_t tracks,
                        const std::vector<FlowEndpoint>& endpoints, FlowIds& ids) {
  TrackEnds ends;
  ends.begin.assign(tracks + 1, 0);
  for (uint32_t track : track_of) {
    if (track != kNoTrack) ++ends.begin[track + 1];
  }
  for (size_t t = 0; t < tracks; ++t) ends.begin[t + 1] += ends.begin[t];
  ends.keys.resize(ends.begin[tracks]);
  std::vector<uint32_t> next(ends.begin.begin(), ends.begin.end() - 1);
  auto count = static_cast<uint32_t>(std::min(endpoints.size(), track_of.size()));
  for (uint32_t i = 0; i < count; ++i) {
    if (track_of[i] == kNoTrack) continue;
    const FlowEndpoint& e = endpoints[i];
    ends.keys[next[track_of[i]]++] = {e.ts_ns, i, e.binds_enclosing};
    ids.add(e);
  }
  for (uint32_t t = 0; t < tracks; ++t) {
    sort_nearly_sorted(std::span<EndKey>(ends.keys).subspan(ends.begin[t], ends.begin[t + 1] - ends.begin[t]), EndLess{});
  }
  return ends;
}

// --- The slices that start where an endpoint is --------------------------
//
// Kineto puts every endpoint at the start of its slice. When slices of the
// endpoint's track start exactly at its time, Chrome's rules pick among
// those alone: the enclosing slice is the last, in nesting order (by start,
// longer first, trace order), of the slices around the time (the sweep's
// stack keeps every one of them), so one that starts at the time: the
// shortest of those, the last in the trace among equals; the next slice is
// the first in that order starting at or after the time: the longest of
// those starting at it, the first among equals. So a pass over the slices in
// trace order, each looked up among its track's endpoint times, binds
// without ordering a million slices. A track where some endpoint finds no
// slice starting at its time is bound by the sweep below instead.

// Of the slices starting at one endpoint time: the innermost of those that
// enclose it (the shortest, the last in the trace among equals) and the
// outermost (the longest, the first among equals).
struct StartingSlices {
  SpanId innermost = kNoSpan;
  SpanId outermost = kNoSpan;
};

// std::lower_bound's answer for `ts` in `keys`, searched outwards from `near`
// (steps of 1, 2, 4, ..., then a binary search in the last step): a track's
// slices come mostly in time order, so the answer is mostly at `near` or
// just past it.
size_t lower_bound_near(std::span<const EndKey> keys, size_t near, int64_t ts) {
  auto before = [](const EndKey& key, int64_t t) { return key.ts_ns < t; };
  size_t low = 0, high = keys.size();  // the answer is in [low, high]
  if (near < keys.size() && keys[near].ts_ns < ts) {
    low = near + 1;
    size_t step = 1;
    while (low + step - 1 < keys.size() && keys[low + step - 1].ts_ns < ts) {
      low += step;
      step *= 2;
    }
    high = std::min(low + step - 1, keys.size());
  } else {
    high = std::min(near, keys.size());
    size_t step = 1;
    while (high >= step && keys[high - step].ts_ns >= ts) {
      high -= step;
      step *= 2;
    }
    low = high >= step ? high - step + 1 : 0;
  }
  return static_cast<size_t>(std::lower_bound(keys.begin() + static_cast<std::ptrdiff_t>(low),
                                              keys.begin() + static_cast<std::ptrdiff_t>(high), ts, before) -
                             keys.begin());
}

// Notes the slices among spans [first, last) that start at an endpoint time
// of their track, at the first key of that time (`found` parallels
// ends.keys).
void find_starting_slices(const std::vector<Span>& spans, const std::vector<uint32_t>& track_of_span, SpanId first,
                          SpanId last, const TrackEnds& ends, std::vector<StartingSlices>& found) {
  std::vector<size_t> near(ends.begin.size() - 1, 0);  // by track: where its last search ended
  for (SpanId i = first; i < last; ++i) {
    uint32_t track = track_of_span[i];
    if (track == kNoTrack || ends.begin[track] == ends.begin[track + 1]) continue;
    std::span<const EndKey> keys = ends.of(track);
    const Span& slice = spans[i];
    size_t at = lower_bound_near(keys, near[track], slice.start_ns);
    near[track] = at;
    if (at == keys.size() || keys[at].ts_ns != slice.start_ns) continue;
    StartingSlices& starting = found[ends.begin[track] + at];
    // Ids ascend: among equal ends, the innermost is the latest, the outermost the first.
    if (slice.end_ns >= slice.start_ns &&
        (starting.innermost == kNoSpan || slice.end_ns <= spans[starting.innermost].end_ns)) {
      starting.innermost = i;
    }
    if (starting.outermost == kNoSpan || slice.end_ns > spans[starting.outermost].end_ns) starting.outermost = i;
  }
}

// `later`'s finds (of spans after all of `earlier`'s) joined into `earlier`.
void join_starting_slices(const std::vector<Span>& spans, std::vector<StartingSlices>& earlier,
                          const std::vector<StartingSlices>& later) {
  for (size_t k = 0; k < earlier.size(); ++k) {
    StartingSlices& to = earlier[k];
    const StartingSlices& from = later[k];
    if (from.innermost != kNoSpan &&
        (to.innermost == kNoSpan || spans[from.innermost].end_ns <= spans[to.innermost].end_ns)) {
      to.innermost = from.innermost;
    }
    if (from.outermost != kNoSpan &&
        (to.outermost == kNoSpan || spans[from.outermost].end_ns > spans[to.outermost].end_ns)) {
      to.outermost = from.outermost;
    }
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

// Binds every endpoint whose time some slice of its track starts at; returns,
// by track, whether the track holds an endpoint that none does (those are
// left to the sweep).
std::vector<uint8_t> bind_at_slice_starts(const std::vector<Span>& spans, const std::vector<uint32_t>& track_of_span,
                                          const TrackEnds& ends, std::vector<SpanId>& bound_of,
                                          bool two_threads) {
  std::vector<StartingSlices> found(ends.keys.size());
  auto count = static_cast<SpanId>(std::min(spans.size(), track_of_span.size()));
  if (two_threads) {
    // The spans in two halves; the second half's finds join the first's.
    std::vector<StartingSlices> found_later(ends.keys.size());
    SpanId middle = count / 2;
    side_by_side([&] { find_starting_slices(spans, track_of_span, middle, count, ends, found_later); },
                 [&] { find_starting_slices(spans, track_of_span, 0, middle, ends, found); });
    join_starting_slices(spans, found, found_later);
  } else {
    find_starting_slices(spans, track_of_span, 0, count, ends, found);
  }
  std::vector<uint8_t> needs_sweep(ends.begin.size() - 1, 0);
  for (uint32_t t = 0; t + 1 < ends.begin.size(); ++t) {
    size_t first_of_time = ends.begin[t];
    for (size_t k = ends.begin[t]; k < ends.begin[t + 1]; ++k) {
      const EndKey& key = ends.keys[k];
      if (ends.keys[first_of_time].ts_ns != key.ts_ns) first_of_time = k;
      const StartingSlices& starting = found[first_of_time];
      SpanId bound = key.binds_enclosing ? starting.innermost : starting.outermost;
      if (bound == kNoSpan) {
        needs_sweep[t] = 1;
        break;
      }
      bound_of[key.index] = bound;
    }
  }
  return needs_sweep;
}

// --- The sweep, for any endpoint --------------------------------------------

// Binds the endpoints of one track (`ends`, in time order) to its slices
// (span ids by start, outer (longer) slices first), by one sweep with a
// stack of the slices open at the current time.
void bind_track(const std::vector<Span>& spans, std::span<const uint32_t> slices, std::span<const EndKey> ends,
                std::vector<SpanId>& bound_of, std::vector<SpanId>& open) {
  open.clear();
  size_t next = 0;
  for (const EndKey& end : ends) {
    if (!end.binds_enclosing) {
      // The next slice: the first starting at or after the endpoint.
      auto found = std::lower_bound(slices.begin(), slices.end(), end.ts_ns,
                                    [&](uint32_t id, int64_t ts) { return spans[id].start_ns < ts; });
      if (found != slices.end()) bound_of[end.index] = *found;
      continue;
    }
    for (; next < slices.size() && spans[slices[next]].start_ns <= end.ts_ns; ++next) {
      int64_t start = spans[slices[next]].start_ns;
      while (!open.empty() && spans[open.back()].end_ns < start) open.pop_back();
      open.push_back(slices[next]);
    }
    while (!open.empty() && spans[open.back()].end_ns < end.ts_ns) open.pop_back();
    if (!open.empty()) bound_of[end.index] = open.back();
  }
}

// The tracks to sweep, largest first (slices and endpoints to order),
// handed out one at a time to whichever thread is free: tracks are
// independent, and a few large ones (a thread's operators, a busy stream)
// hold most of the work.
class TrackQueue {
 public:
  TrackQueue(const ByTrack& span_groups, const TrackEnds& ends, const std::vector<uint8_t>& wanted) {
    std::vector<std::pair<size_t, uint32_t>> by_work;  // (work, track)
    for (uint32_t t = 0; t < wanted.size(); ++t) {
      if (wanted[t]) by_work.emplace_back(ends.of(t).size() + span_groups.begin[t + 1] - span_groups.begin[t], t);
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
void sweep_tracks(const std::vector<Span>& spans, ByTrack& span_groups, const TrackEnds& ends, TrackQueue& queue,
                  std::vector<SpanId>& bound_of) {
  // By start, outer (longer) slices first, then trace order. The ids are
  // sorted in place (a track may hold a million slices: copies of their
  // times would add tens of MB to the import's peak).
  auto slice_less = [&](uint32_t a, uint32_t b) {
    const Span& x = spans[a];
    const Span& y = spans[b];
    return std::tie(x.start_ns, y.end_ns, a) < std::tie(y.start_ns, x.end_ns, b);
  };
  // Kept from track to track: the largest tracks come first, so each is
  // allocated about once (fresh pages cost a fault each).
  std::vector<SpanId> open;
  std::vector<uint32_t> scratch;
  for (uint32_t t = queue.take(); t != kNoTrack; t = queue.take()) {
    std::span<uint32_t> slices(span_groups.order.data() + span_groups.begin[t],
                               span_groups.begin[t + 1] - span_groups.begin[t]);
    // Kineto writes most tracks in time order, with a few items out of place,
    // or in a few stretches (a trace of several profiling windows in a
    // stretch per window; the 508 MB trace of bench/ two per window).
    sort_nearly_sorted(slices, slice_less, scratch);
    bind_track(spans, slices, ends.of(t), bound_of, open);
  }
}

// The slice of each endpoint (kNoSpan for those on none): at the slices
// starting at their times where that binds all of a track's endpoints, else
// by a sweep over the track's ordered slices. Gathers the `ids` of the
// endpoints' flows on the way.
std::vector<SpanId> bind_endpoints(const std::vector<Span>& spans, FlowTracks tracks,
                                   const std::vector<FlowEndpoint>& endpoints, FlowIds& ids, bool two_threads) {
  TrackEnds ends = ends_by_track(tracks.of_endpoints, tracks.count, endpoints, ids);
  // Apart from the endpoints, 4 bytes each, so binding writes none of the
  // endpoints' cache lines; in the endpoints' tracks, which are done with
  // (the same size, and their pages touched already: no fresh memory).
  std::vector<SpanId> bound_of = std::move(tracks.of_endpoints);
  bound_of.assign(endpoints.size(), kNoSpan);
  std::vector<uint8_t> needs_sweep = bind_at_slice_starts(spans, tracks.of_spans, ends, bound_of, two_threads);
  if (std::find(needs_sweep.begin(), needs_sweep.end(), 1) == needs_sweep.end()) return bound_of;
  ByTrack span_groups = group_by_track(tracks.of_spans, needs_sweep);
  tracks.of_spans = {};
  // Each endpoint's slice is written by the one thread binding its track.
  TrackQueue queue(span_groups, ends, needs_sweep);
  auto sweep = [&] { sweep_tracks(spans, span_groups, ends, queue, bound_of); };
  if (two_threads) {
    side_by_side(sweep, sweep);
  } else {
    sweep();
  }
  return bound_of;
}

// Sorts `values` stably by their bits [low, high): a least-significant-digit
// radix sort, 11 bits a pass.
void radix_sort_bits(std::vector<uint64_t>& values, unsigned low, unsigned high) {
  constexpr unsigned kDigitBits = 11;
  std::vector<uint64_t> buffer(values.size());
  std::vector<uint32_t> count(size_t{1} << kDigitBits);
  for (unsigned shift = low; shift < high; shift += kDigitBits) {
    uint64_t mask = (uint64_t{1} << std::min(kDigitBits, high - shift)) - 1;
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t v : values) count[(v >> shift) & mask]++;
    uint32_t next = 0;
    for (uint32_t& c : count) next += std::exchange(c, next);  // each digit's first place
    for (uint64_t v : values) buffer[count[(v >> shift) & mask]++] = v;
    values.swap(buffer);
  }
}

// The bound endpoints by flow (kind, whether the id is text, id), then trace
// order, as one number each: the flow's (group rank, id less the least id)
// above the endpoint's index. Each flow's numbers share the bits above
// `index_bits`.
struct SortedFlows {
  std::vector<uint64_t> keys;
  unsigned index_bits = 0;
  uint32_t index(size_t at) const { return static_cast<uint32_t>(keys[at] & ((uint64_t{1} << index_bits) - 1)); }
  bool same_flow(size_t a, size_t b) const { return (keys[a] >> index_bits) == (keys[b] >> index_bits); }
};

// A trace's ids span a narrow range (Kineto numbers its flows), so the keys
// fit in 64 bits and a radix sort orders them in a few passes whatever the
// order they come in (Kineto writes some flows' starts in descending id
// order, which defeats sorts that look for ascending runs). Ids that span
// more are compared in full instead.
// (Passes over a million endpoints cost memory bandwidth: what sizes the keys
// was gathered by the pass that ordered them by track.)
SortedFlows sort_by_flow(const std::vector<FlowEndpoint>& endpoints, const std::vector<SpanId>& bound_of,
                         FlowIds& ids) {
  FlowGroups& groups = ids.groups;
  groups.finish();
  SortedFlows out;
  size_t bound = endpoints.size() - static_cast<size_t>(std::count(bound_of.begin(), bound_of.end(), kNoSpan));
  if (bound == 0) return out;
  out.keys.reserve(bound);
  auto index_bits = static_cast<unsigned>(std::bit_width(endpoints.size() - 1));
  auto id_bits = static_cast<unsigned>(std::bit_width(ids.most - ids.least));
  auto group_bits = static_cast<unsigned>(std::bit_width(groups.size() - 1));
  if (index_bits + id_bits + group_bits <= 64) {
    out.index_bits = index_bits;
    for (uint32_t i = 0; i < endpoints.size(); ++i) {
      if (bound_of[i] == kNoSpan) continue;
      const FlowEndpoint& e = endpoints[i];
      uint64_t flow = (uint64_t{groups.rank(e)} << id_bits) | (ordered_id(e.id) - ids.least);
      out.keys.push_back(flow << index_bits | i);
    }
    radix_sort_bits(out.keys, index_bits, index_bits + id_bits + group_bits);  // in index order already
    return out;
  }
  struct Key {
    uint32_t group;
    uint64_t id;
    uint32_t index;
    bool operator<(const Key& other) const {
      return std::tie(group, id, index) < std::tie(other.group, other.id, other.index);
    }
  };
  std::vector<Key> keys;
  keys.reserve(bound);
  for (uint32_t i = 0; i < endpoints.size(); ++i) {
    if (bound_of[i] != kNoSpan) keys.push_back({groups.rank(endpoints[i]), ordered_id(endpoints[i].id), i});
  }
  std::sort(keys.begin(), keys.end());
  // Numbered by flow above 32 bits of index.
  out.index_bits = 32;
  uint64_t flow = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (k > 0 && (keys[k].group != keys[k - 1].group || keys[k].id != keys[k - 1].id)) ++flow;
    out.keys.push_back(flow << 32 | keys[k].index);
  }
  return out;
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
size_t pair_flow(const std::vector<FlowEndpoint>& endpoints, const std::vector<SpanId>& bound_of,
                 const std::vector<FlowMember>& members, std::vector<Flow>& flows) {
  size_t starts = 0;
  while (starts < members.size() && members[starts].is_start) ++starts;
  if (starts == 0 || starts == members.size()) return members.size();
  // One start may feed several ends (one launch, several kernels); an end
  // pairs with the latest start at or before it, else with the first.
  size_t s = 0;
  for (size_t f = starts; f < members.size(); ++f) {
    while (s + 1 < starts && members[s + 1].ts_ns <= members[f].ts_ns) ++s;
    uint32_t end = members[f].index;
    flows.push_back(Flow{bound_of[members[s].index], bound_of[end], endpoints[end].kind});
  }
  return 0;
}

}  // namespace

FlowBindingCounts bind_flows(const std::vector<Span>& spans, FlowTracks tracks,
                             const std::vector<FlowEndpoint>& endpoints, std::vector<Flow>& flows, bool two_threads) {
  FlowBindingCounts counts;
  if (endpoints.empty()) return counts;  // spares a pass over every span
  FlowIds ids;
  std::vector<SpanId> bound_of = bind_endpoints(spans, std::move(tracks), endpoints, ids, two_threads);
  SortedFlows sorted = sort_by_flow(endpoints, bound_of, ids);
  counts.unbound = endpoints.size() - sorted.keys.size();
  std::vector<FlowMember> members;
  for (size_t begin = 0; begin < sorted.keys.size();) {
    members.clear();
    size_t end = begin;
    for (; end < sorted.keys.size() && sorted.same_flow(begin, end); ++end) {
      const FlowEndpoint& e = endpoints[sorted.index(end)];
      members.push_back({e.ts_ns, sorted.index(end), e.is_start});
    }
    std::sort(members.begin(), members.end());
    counts.unpaired += pair_flow(endpoints, bound_of, members, flows);
    begin = end;
  }
  return counts;
}

}  // namespace stepscope
