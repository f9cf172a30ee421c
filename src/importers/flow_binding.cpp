#include "importers/flow_binding.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace stepscope {

namespace {

constexpr SpanId kNoSpan = std::numeric_limits<SpanId>::max();
constexpr uint32_t kNoTrack = std::numeric_limits<uint32_t>::max();

// Dense numbers for (pid, tid) tracks, in order of first appearance. A trace
// interleaves a few tracks (a thread, its GPU streams), so a small
// direct-mapped cache answers most lookups without the hash map.
class TrackNumbers {
 public:
  uint32_t number(int64_t pid, int64_t tid) {
    Recent& recent = recent_[slot_of(pid, tid)];
    if (recent.number != kNoTrack && recent.pid == pid && recent.tid == tid) return recent.number;
    auto [found, inserted] = numbers_.try_emplace(Key{pid, tid}, static_cast<uint32_t>(numbers_.size()));
    recent = Recent{pid, tid, found->second};
    return found->second;
  }

  uint32_t find(int64_t pid, int64_t tid) {
    Recent& recent = recent_[slot_of(pid, tid)];
    if (recent.number != kNoTrack && recent.pid == pid && recent.tid == tid) return recent.number;
    auto found = numbers_.find(Key{pid, tid});
    if (found == numbers_.end()) return kNoTrack;
    recent = Recent{pid, tid, found->second};
    return found->second;
  }

  size_t size() const { return numbers_.size(); }

 private:
  using Key = std::pair<int64_t, int64_t>;
  struct KeyHash {
    size_t operator()(const Key& key) const { return mix(key.first, key.second); }
  };
  struct Recent {
    int64_t pid = 0, tid = 0;
    uint32_t number = kNoTrack;
  };

  static size_t mix(int64_t pid, int64_t tid) {
    auto mixed = static_cast<uint64_t>(pid) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(tid);
    return static_cast<size_t>(mixed ^ (mixed >> 29));
  }
  static size_t slot_of(int64_t pid, int64_t tid) {
    return (static_cast<uint64_t>(mix(pid, tid)) * 0x9E3779B97F4A7C15ULL) >> 60;  // 16 slots
  }

  std::unordered_map<Key, uint32_t, KeyHash> numbers_;
  std::array<Recent, 16> recent_{};
};

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
void sort_runs(std::vector<T>& items, Less less, std::vector<size_t>& bounds) {
  bounds.assign(1, 0);
  for (size_t i = 1; i < items.size(); ++i) {
    if (less(items[i], items[i - 1])) bounds.push_back(i);
  }
  bounds.push_back(items.size());
  if (bounds.size() > 2 + items.size() / 16) {  // many short runs: sorting is cheaper
    std::sort(items.begin(), items.end(), less);
    return;
  }
  while (bounds.size() > 2) {
    size_t runs = bounds.size() - 1;
    size_t kept = 1;
    for (size_t k = 0; k < runs; k += 2) {
      if (k + 1 < runs) {
        std::inplace_merge(items.begin() + static_cast<ptrdiff_t>(bounds[k]),
                           items.begin() + static_cast<ptrdiff_t>(bounds[k + 1]),
                           items.begin() + static_cast<ptrdiff_t>(bounds[k + 2]), less);
      }
      bounds[kept++] = bounds[std::min(k + 2, runs)];
    }
    bounds.resize(kept);
  }
}

// A slice of one track as the sweep needs it, flat so ordering and
// sweeping touch no other memory.
struct SliceKey {
  int64_t start_ns;
  int64_t end_ns;
  SpanId id;
};

// By start, outer (longer) slices first, then file order.
bool slice_less(const SliceKey& a, const SliceKey& b) {
  return std::tie(a.start_ns, b.end_ns, a.id) < std::tie(b.start_ns, a.end_ns, b.id);
}

struct EndKey {
  int64_t ts_ns;
  uint32_t index;  // in the endpoints
  bool binds_enclosing;
};

bool end_less(const EndKey& a, const EndKey& b) { return std::tie(a.ts_ns, a.index) < std::tie(b.ts_ns, b.index); }

// Binds the endpoints of one track (`ends`, in time order) to its slices
// (`slices`, in slice_less order), by one sweep with a stack of the slices
// open at the current time.
void bind_track(const std::vector<SliceKey>& slices, const std::vector<EndKey>& ends, std::vector<SpanId>& bound,
                std::vector<uint32_t>& open) {
  open.clear();
  size_t next = 0;
  for (const EndKey& end : ends) {
    if (!end.binds_enclosing) {
      // The next slice: the first starting at or after the endpoint.
      auto found = std::lower_bound(slices.begin(), slices.end(), end.ts_ns,
                                    [](const SliceKey& slice, int64_t ts) { return slice.start_ns < ts; });
      if (found != slices.end()) bound[end.index] = found->id;
      continue;
    }
    for (; next < slices.size() && slices[next].start_ns <= end.ts_ns; ++next) {
      while (!open.empty() && slices[open.back()].end_ns < slices[next].start_ns) open.pop_back();
      open.push_back(static_cast<uint32_t>(next));
    }
    while (!open.empty() && slices[open.back()].end_ns < end.ts_ns) open.pop_back();
    if (!open.empty()) bound[end.index] = slices[open.back()].id;
  }
}

// The bound span of every endpoint (kNoSpan when none). Only tracks with
// endpoints are ordered, each on its own.
std::vector<SpanId> bind_endpoints(const std::vector<Span>& spans, const std::vector<FlowEndpoint>& endpoints) {
  TrackNumbers tracks;
  std::vector<uint32_t> span_track(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) span_track[i] = tracks.number(spans[i].pid, spans[i].tid);
  std::vector<uint32_t> endpoint_track(endpoints.size());
  for (size_t i = 0; i < endpoints.size(); ++i) endpoint_track[i] = tracks.find(endpoints[i].pid, endpoints[i].tid);
  ByTrack span_groups = group_by_track(span_track, tracks.size());
  span_track = {};
  ByTrack end_groups = group_by_track(endpoint_track, tracks.size());

  std::vector<SpanId> bound(endpoints.size(), kNoSpan);
  std::vector<SliceKey> slices;
  std::vector<EndKey> ends;
  std::vector<uint32_t> open;
  std::vector<size_t> bounds;
  for (size_t t = 0; t < tracks.size(); ++t) {
    if (end_groups.begin[t] == end_groups.begin[t + 1]) continue;
    slices.clear();
    for (uint32_t i = span_groups.begin[t]; i < span_groups.begin[t + 1]; ++i) {
      const Span& span = spans[span_groups.order[i]];
      slices.push_back(SliceKey{span.start_ns, span.end_ns, span_groups.order[i]});
    }
    ends.clear();
    for (uint32_t i = end_groups.begin[t]; i < end_groups.begin[t + 1]; ++i) {
      const FlowEndpoint& end = endpoints[end_groups.order[i]];
      ends.push_back(EndKey{end.ts_ns, end_groups.order[i], end.binds_enclosing});
    }
    sort_runs(slices, slice_less, bounds);
    sort_runs(ends, end_less, bounds);
    bind_track(slices, ends, bound, open);
  }
  return bound;
}

// A bound endpoint's place among its flow's: flows together, starts before
// ends, each in time order (then file order). Flat, so sorting touches no
// other memory.
struct FlowOrderKey {
  StringId kind;
  bool id_is_text;
  bool is_end;
  int64_t id;
  int64_t ts_ns;
  uint32_t index;

  bool operator<(const FlowOrderKey& other) const {
    return std::tie(kind, id_is_text, id, is_end, ts_ns, index) <
           std::tie(other.kind, other.id_is_text, other.id, other.is_end, other.ts_ns, other.index);
  }
  bool same_flow(const FlowOrderKey& other) const {
    return kind == other.kind && id_is_text == other.id_is_text && id == other.id;
  }
};

}  // namespace

FlowBindingCounts bind_flows(const std::vector<Span>& spans, const std::vector<FlowEndpoint>& endpoints,
                             std::vector<Flow>& flows) {
  FlowBindingCounts counts;
  if (endpoints.empty()) return counts;  // spares ordering every span
  std::vector<SpanId> bound = bind_endpoints(spans, endpoints);
  std::vector<FlowOrderKey> order;
  order.reserve(endpoints.size());
  for (uint32_t i = 0; i < endpoints.size(); ++i) {
    const FlowEndpoint& e = endpoints[i];
    if (bound[i] == kNoSpan) {
      ++counts.unbound;
    } else {
      order.push_back(FlowOrderKey{e.kind, e.id_is_text, !e.is_start, e.id, e.ts_ns, i});
    }
  }
  std::sort(order.begin(), order.end());
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() && order[end].same_flow(order[begin])) ++end;
    // One start may feed several ends (one launch, several kernels); an end
    // pairs with the latest start at or before it, else with the first.
    size_t starts_end = begin;
    while (starts_end < end && !order[starts_end].is_end) ++starts_end;
    if (starts_end == begin || starts_end == end) counts.unpaired += end - begin;
    size_t s = begin;
    for (size_t f = starts_end; f < end && starts_end > begin; ++f) {
      while (s + 1 < starts_end && order[s + 1].ts_ns <= order[f].ts_ns) ++s;
      flows.push_back(Flow{bound[order[s].index], bound[order[f].index], order[f].kind});
    }
    begin = end;
  }
  return counts;
}

}  // namespace stepscope
