#include "importers/flow_binding.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace stepscope {

namespace {

constexpr SpanId kNoSpan = std::numeric_limits<SpanId>::max();
constexpr uint32_t kNoTrack = std::numeric_limits<uint32_t>::max();

// Dense numbers for (pid, tid) tracks, in order of first appearance. Spans
// come in runs on one track, so the last answer is kept.
class TrackNumbers {
 public:
  uint32_t number(int64_t pid, int64_t tid) {
    if (have_last_ && pid == last_pid_ && tid == last_tid_) return last_;
    auto [found, inserted] = numbers_.try_emplace(Key{pid, tid}, static_cast<uint32_t>(numbers_.size()));
    remember(pid, tid, found->second);
    return found->second;
  }

  uint32_t find(int64_t pid, int64_t tid) {
    if (have_last_ && pid == last_pid_ && tid == last_tid_) return last_;
    auto found = numbers_.find(Key{pid, tid});
    if (found == numbers_.end()) return kNoTrack;
    remember(pid, tid, found->second);
    return found->second;
  }

  size_t size() const { return numbers_.size(); }

 private:
  using Key = std::pair<int64_t, int64_t>;
  struct KeyHash {
    size_t operator()(const Key& key) const {
      auto mixed = static_cast<uint64_t>(key.first) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(key.second);
      return static_cast<size_t>(mixed ^ (mixed >> 29));
    }
  };

  void remember(int64_t pid, int64_t tid, uint32_t number) {
    have_last_ = true;
    last_pid_ = pid;
    last_tid_ = tid;
    last_ = number;
  }

  std::unordered_map<Key, uint32_t, KeyHash> numbers_;
  bool have_last_ = false;
  int64_t last_pid_ = 0, last_tid_ = 0;
  uint32_t last_ = 0;
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

// Sorts [first, last) by `less` unless it already is (Kineto writes most
// tracks in time order, so the check usually saves the sort).
template <typename Iterator, typename Less>
void sort_unless_sorted(Iterator first, Iterator last, Less less) {
  if (!std::is_sorted(first, last, less)) std::sort(first, last, less);
}

// Binds the endpoints of one track (`ends`, in time order) to its slices
// (`slices`, by start, outer (longer) slices first), by one sweep with a
// stack of the slices open at the current time.
void bind_track(const std::vector<Span>& spans, const uint32_t* slices, size_t slice_count,
                const std::vector<FlowEndpoint>& endpoints, const uint32_t* ends, size_t end_count,
                std::vector<SpanId>& bound, std::vector<SpanId>& open) {
  open.clear();
  size_t next = 0;
  for (size_t e = 0; e < end_count; ++e) {
    const FlowEndpoint& end = endpoints[ends[e]];
    if (!end.binds_enclosing) {
      // The next slice: the first starting at or after the endpoint.
      const uint32_t* found = std::lower_bound(slices, slices + slice_count, end.ts_ns,
                                               [&](uint32_t id, int64_t ts) { return spans[id].start_ns < ts; });
      if (found != slices + slice_count) bound[ends[e]] = *found;
      continue;
    }
    for (; next < slice_count && spans[slices[next]].start_ns <= end.ts_ns; ++next) {
      const Span& starting = spans[slices[next]];
      while (!open.empty() && spans[open.back()].end_ns < starting.start_ns) open.pop_back();
      open.push_back(slices[next]);
    }
    while (!open.empty() && spans[open.back()].end_ns < end.ts_ns) open.pop_back();
    if (!open.empty()) bound[ends[e]] = open.back();
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

  auto slice_less = [&](uint32_t a, uint32_t b) {
    const Span& x = spans[a];
    const Span& y = spans[b];
    return std::tie(x.start_ns, y.end_ns, a) < std::tie(y.start_ns, x.end_ns, b);
  };
  auto end_less = [&](uint32_t a, uint32_t b) {
    return std::tie(endpoints[a].ts_ns, a) < std::tie(endpoints[b].ts_ns, b);
  };
  std::vector<SpanId> bound(endpoints.size(), kNoSpan);
  std::vector<SpanId> open;
  for (size_t t = 0; t < tracks.size(); ++t) {
    uint32_t* ends = end_groups.order.data() + end_groups.begin[t];
    size_t end_count = end_groups.begin[t + 1] - end_groups.begin[t];
    if (end_count == 0) continue;
    uint32_t* slices = span_groups.order.data() + span_groups.begin[t];
    size_t slice_count = span_groups.begin[t + 1] - span_groups.begin[t];
    sort_unless_sorted(slices, slices + slice_count, slice_less);
    sort_unless_sorted(ends, ends + end_count, end_less);
    bind_track(spans, slices, slice_count, endpoints, ends, end_count, bound, open);
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
