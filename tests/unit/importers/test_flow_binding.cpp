// bind_flows against a plain reference: the same rules written with full
// sorts and no shortcuts (the algorithm before the nearly-sorted slice order,
// the radix sort of flow keys and the binding at slice starts), on random
// tracks and endpoints in random and in nearly sorted order, endpoints
// anywhere or at slice starts, on one thread and on two.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "importers/flow_binding.hpp"

namespace stepscope {
namespace {

constexpr SpanId kUnbound = UINT32_MAX;

// The slice an endpoint binds to: Chrome's rules, by a sweep over its
// track's slices in nesting order (start, longer first, trace order) with a
// stack of the open ones, as a viewer reads a track.
SpanId reference_bound(const std::vector<Span>& spans, const std::vector<uint32_t>& track_of_span,
                       uint32_t track, const FlowEndpoint& end) {
  if (track == kNoFlowTrack) return kUnbound;
  std::vector<SpanId> slices;
  for (SpanId i = 0; i < spans.size(); ++i) {
    if (track_of_span[i] == track) slices.push_back(i);
  }
  std::sort(slices.begin(), slices.end(), [&](SpanId a, SpanId b) {
    return std::tie(spans[a].start_ns, spans[b].end_ns, a) < std::tie(spans[b].start_ns, spans[a].end_ns, b);
  });
  if (!end.binds_enclosing) {
    for (SpanId id : slices) {
      if (spans[id].start_ns >= end.ts_ns) return id;
    }
    return kUnbound;
  }
  std::vector<SpanId> open;
  for (SpanId id : slices) {
    if (spans[id].start_ns > end.ts_ns) break;
    while (!open.empty() && spans[open.back()].end_ns < spans[id].start_ns) open.pop_back();
    open.push_back(id);
  }
  while (!open.empty() && spans[open.back()].end_ns < end.ts_ns) open.pop_back();
  return open.empty() ? kUnbound : open.back();
}

struct Reference {
  std::vector<Flow> flows;
  FlowBindingCounts counts;
};

Reference reference_flows(const std::vector<Span>& spans, const FlowTracks& tracks,
                          const std::vector<FlowEndpoint>& endpoints) {
  Reference out;
  struct Bound {
    FlowEndpoint e;
    uint32_t index;  // in the trace
    SpanId slice;
  };
  std::vector<Bound> bound;
  for (uint32_t i = 0; i < endpoints.size(); ++i) {
    SpanId slice = reference_bound(spans, tracks.of_spans, tracks.of_endpoints[i], endpoints[i]);
    if (slice == kUnbound) {
      ++out.counts.unbound;
    } else {
      bound.push_back({endpoints[i], i, slice});
    }
  }
  auto flow_of = [](const Bound& b) { return std::tuple(b.e.kind, b.e.id_is_text, b.e.id); };
  std::sort(bound.begin(), bound.end(), [&](const Bound& a, const Bound& b) {
    return std::tuple(flow_of(a), !a.e.is_start, a.e.ts_ns, a.index) <
           std::tuple(flow_of(b), !b.e.is_start, b.e.ts_ns, b.index);
  });
  for (size_t begin = 0; begin < bound.size();) {
    size_t end = begin;
    while (end < bound.size() && flow_of(bound[end]) == flow_of(bound[begin])) ++end;
    size_t starts_end = begin;
    while (starts_end < end && bound[starts_end].e.is_start) ++starts_end;
    if (starts_end == begin || starts_end == end) {
      out.counts.unpaired += end - begin;
    } else {
      for (size_t f = starts_end; f < end; ++f) {
        size_t s = begin;  // the latest start at or before the end, else the first
        for (size_t c = begin; c < starts_end; ++c) {
          if (bound[c].e.ts_ns <= bound[f].e.ts_ns) s = c;
        }
        out.flows.push_back({bound[s].slice, bound[f].slice, bound[f].e.kind});
      }
    }
    begin = end;
  }
  return out;
}

struct Case {
  std::vector<Span> spans;
  FlowTracks tracks;
  std::vector<FlowEndpoint> endpoints;
};

// Shuffles `items` and their parallel track numbers by one permutation.
template <typename T>
void shuffle_together(std::vector<T>& items, std::vector<uint32_t>& tracks, std::mt19937& random) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), random);
  std::vector<T> shuffled_items;
  std::vector<uint32_t> shuffled_tracks;
  for (size_t i : order) {
    shuffled_items.push_back(items[i]);
    shuffled_tracks.push_back(tracks[i]);
  }
  items = std::move(shuffled_items);
  tracks = std::move(shuffled_tracks);
}

// Tracks of nested slices (with ties and a few overlaps), written in time
// order with a few out of place or in a random order; flows of a few kinds
// whose ids come ascending, descending or at random, some numeric and
// negative, some text, endpoints anywhere, or (as Kineto writes them) at the
// start of a slice of their track: all of them, or all but about one in 30.
enum class Endpoints { kAnywhere, kAtStarts, kMostlyAtStarts };
Case random_case(std::mt19937& random, size_t tracks, bool shuffled, Endpoints where = Endpoints::kAnywhere) {
  Case c;
  c.tracks.count = tracks + 1;  // the last track has no spans
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(random); };
  for (uint32_t t = 0; t < tracks; ++t) {
    int64_t ts = uniform(0, 50);
    size_t slices = static_cast<size_t>(uniform(0, 60));
    for (size_t s = 0; s < slices; ++s) {
      int64_t length = uniform(0, 40);
      Span outer{.start_ns = ts, .end_ns = ts + length};
      c.spans.push_back(outer);
      c.tracks.of_spans.push_back(t);
      for (int64_t inner = uniform(0, 2); inner > 0; --inner) {  // nested (or overlapping past its end)
        int64_t start = ts + uniform(0, length);
        c.spans.push_back({.start_ns = start, .end_ns = start + uniform(0, length / 2 + 3)});
        c.tracks.of_spans.push_back(t);
      }
      ts += length + uniform(-3, 10);
    }
  }
  if (shuffled) {
    shuffle_together(c.spans, c.tracks.of_spans, random);
  } else {
    for (size_t i = 1; i < c.spans.size(); i += 7) {  // a few out of place
      std::swap(c.spans[i], c.spans[i - 1]);
      std::swap(c.tracks.of_spans[i], c.tracks.of_spans[i - 1]);
    }
  }
  size_t flows = static_cast<size_t>(uniform(0, 80));
  int64_t descending = 1000;
  for (size_t f = 0; f < flows; ++f) {
    StringId kind = static_cast<StringId>(uniform(3, 5));
    bool text = uniform(0, 5) == 0;
    int64_t id = kind == 3 ? static_cast<int64_t>(f) : kind == 4 ? descending-- : uniform(-20, 20);
    for (int64_t e = uniform(1, 4); e > 0; --e) {
      FlowEndpoint endpoint{};
      endpoint.kind = kind;
      endpoint.id_is_text = text;
      endpoint.id = id;
      endpoint.is_start = uniform(0, 2) == 0;
      endpoint.binds_enclosing = endpoint.is_start || uniform(0, 4) > 0;
      endpoint.ts_ns = uniform(0, 200);
      uint32_t track = uniform(0, 9) == 0 ? kNoFlowTrack : static_cast<uint32_t>(uniform(0, tracks));
      bool at_start = where == Endpoints::kAtStarts || (where == Endpoints::kMostlyAtStarts && uniform(0, 30) > 0);
      if (at_start) {
        std::vector<int64_t> starts;
        for (size_t s = 0; s < c.spans.size(); ++s) {
          if (c.tracks.of_spans[s] == track) starts.push_back(c.spans[s].start_ns);
        }
        if (!starts.empty()) endpoint.ts_ns = starts[static_cast<size_t>(uniform(0, static_cast<int64_t>(starts.size()) - 1))];
      }
      c.endpoints.push_back(endpoint);
      c.tracks.of_endpoints.push_back(track);
    }
  }
  if (shuffled) shuffle_together(c.endpoints, c.tracks.of_endpoints, random);
  return c;
}

bool same_flows(const std::vector<Flow>& a, const std::vector<Flow>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Flow& x, const Flow& y) {
    return x.from == y.from && x.to == y.to && x.kind == y.kind;
  });
}

TEST(BindFlows, MatchesThePlainReferenceOnRandomTraces) {
  std::mt19937 random(7);
  for (int round = 0; round < 800; ++round) {
    // Half the rounds with endpoints at slice starts: bound where slices
    // start, and by the sweep on the tracks where one endpoint is elsewhere.
    Endpoints where = round % 4 == 1 ? Endpoints::kAtStarts
                      : round % 4 == 3 ? Endpoints::kMostlyAtStarts
                                       : Endpoints::kAnywhere;
    Case c = random_case(random, 1 + round % 5, round % 3 == 0, where);
    Reference expected = reference_flows(c.spans, c.tracks, c.endpoints);
    for (bool two_threads : {false, true}) {
      std::vector<FlowEndpoint> endpoints = c.endpoints;
      std::vector<Flow> flows;
      FlowBindingCounts counts = bind_flows(c.spans, c.tracks, endpoints, flows, two_threads);
      ASSERT_TRUE(same_flows(flows, expected.flows)) << "round " << round << ", two threads " << two_threads;
      EXPECT_EQ(counts.unbound, expected.counts.unbound) << "round " << round;
      EXPECT_EQ(counts.unpaired, expected.counts.unpaired) << "round " << round;
    }
  }
}

// The keys' width is sized by every endpoint on a track with slices, bound
// or not: an unbound endpoint whose id is far from the others' widens the
// keys past 64 bits (the full sort) without changing the flows or their order.
TEST(BindFlows, UnboundEndpointsWithFarIdsChangeNothing) {
  std::vector<Span> spans{{.start_ns = 0, .end_ns = 100}};
  auto endpoint = [](int64_t id, bool start, int64_t ts) {
    FlowEndpoint e{};
    e.kind = 3;
    e.id = id;
    e.is_start = start;
    e.binds_enclosing = true;
    e.ts_ns = ts;
    return e;
  };
  std::vector<FlowEndpoint> near{endpoint(7, false, 50), endpoint(5, true, 10), endpoint(5, false, 20),
                                 endpoint(7, true, 40)};
  std::vector<FlowEndpoint> with_far = near;
  with_far.push_back(endpoint(INT64_MIN, true, 500));  // past the slice: unbound
  with_far.push_back(endpoint(INT64_MAX, false, 600));
  for (const auto& endpoints : {near, with_far}) {
    FlowTracks tracks{{0}, std::vector<uint32_t>(endpoints.size(), 0), 1};
    Reference expected = reference_flows(spans, tracks, endpoints);
    std::vector<Flow> flows;
    FlowBindingCounts counts = bind_flows(spans, tracks, endpoints, flows);
    ASSERT_EQ(flows.size(), 2u);
    EXPECT_TRUE(same_flows(flows, expected.flows));
    EXPECT_EQ(counts.unbound, endpoints.size() - 4);
    EXPECT_EQ(counts.unpaired, 0u);
  }
}

// Ids across the whole int64 range sort as signed numbers, text ids after
// numeric ones of the same kind, kinds by their string id.
TEST(BindFlows, OrdersFlowsByKindTextAndSignedId) {
  std::vector<Span> spans{{.start_ns = 0, .end_ns = 100}};
  std::vector<FlowEndpoint> endpoints;
  FlowTracks tracks{{0}, {}, 1};
  const std::vector<std::tuple<StringId, bool, int64_t>> ids = {
      {9, false, INT64_MAX}, {9, false, -1}, {2, true, 0}, {9, false, INT64_MIN}, {2, false, 5}, {9, false, 0}};
  for (auto [kind, text, id] : ids) {
    for (bool start : {false, true}) {
      FlowEndpoint e{};
      e.kind = kind;
      e.id_is_text = text;
      e.id = id;
      e.is_start = start;
      e.binds_enclosing = true;
      e.ts_ns = 10;
      endpoints.push_back(e);
      tracks.of_endpoints.push_back(0);
    }
  }
  Reference expected = reference_flows(spans, tracks, endpoints);
  std::vector<Flow> flows;
  bind_flows(spans, tracks, endpoints, flows);
  ASSERT_EQ(flows.size(), ids.size());
  EXPECT_TRUE(same_flows(flows, expected.flows));
  std::vector<StringId> kinds;
  for (const Flow& flow : flows) kinds.push_back(flow.kind);
  EXPECT_EQ(kinds, (std::vector<StringId>{2, 2, 9, 9, 9, 9}));
}

}  // namespace
}  // namespace stepscope
