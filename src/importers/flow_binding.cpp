#include "importers/flow_binding.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

namespace stepscope {

namespace {

constexpr SpanId kNoSpan = std::numeric_limits<SpanId>::max();

bool same_flow(const FlowEndpoint& a, const FlowEndpoint& b) {
  return a.kind == b.kind && a.id_is_text == b.id_is_text && a.id == b.id;
}

bool track_less(const Span& a, const Span& b) { return std::tie(a.pid, a.tid) < std::tie(b.pid, b.tid); }

// Span ids ordered by track, then start, outer (longer) slices first.
std::vector<SpanId> spans_in_track_order(const std::vector<Span>& spans) {
  std::vector<SpanId> order(spans.size());
  std::iota(order.begin(), order.end(), SpanId{0});
  std::sort(order.begin(), order.end(), [&](SpanId a, SpanId b) {
    const Span& x = spans[a];
    const Span& y = spans[b];
    return std::tie(x.pid, x.tid, x.start_ns, y.end_ns, a) < std::tie(y.pid, y.tid, y.start_ns, x.end_ns, b);
  });
  return order;
}

SpanId next_slice(const std::vector<Span>& spans, const std::vector<SpanId>& order, const FlowEndpoint& end) {
  auto found = std::lower_bound(order.begin(), order.end(), end, [&](SpanId id, const FlowEndpoint& e) {
    const Span& s = spans[id];
    return std::tie(s.pid, s.tid, s.start_ns) < std::tie(e.pid, e.tid, e.ts_ns);
  });
  if (found == order.end() || spans[*found].pid != end.pid || spans[*found].tid != end.tid) return kNoSpan;
  return *found;
}

// The bound span of every endpoint (kNoSpan when none), by one sweep over
// tracks with a stack of the slices open at the current time.
std::vector<SpanId> bind_endpoints(const std::vector<Span>& spans, const std::vector<FlowEndpoint>& endpoints) {
  std::vector<SpanId> order = spans_in_track_order(spans);
  std::vector<uint32_t> by_time(endpoints.size());
  std::iota(by_time.begin(), by_time.end(), uint32_t{0});
  std::sort(by_time.begin(), by_time.end(), [&](uint32_t a, uint32_t b) {
    const FlowEndpoint& x = endpoints[a];
    const FlowEndpoint& y = endpoints[b];
    return std::tie(x.pid, x.tid, x.ts_ns, a) < std::tie(y.pid, y.tid, y.ts_ns, b);
  });
  std::vector<SpanId> bound(endpoints.size(), kNoSpan);
  std::vector<SpanId> open;
  size_t next = 0;
  Span current{};
  bool have_track = false;
  for (uint32_t index : by_time) {
    const FlowEndpoint& end = endpoints[index];
    Span probe{};
    probe.pid = end.pid;
    probe.tid = end.tid;
    if (!have_track || track_less(current, probe)) {
      open.clear();
      current = probe;
      have_track = true;
      while (next < order.size() && track_less(spans[order[next]], probe)) ++next;
    }
    if (!end.binds_enclosing) {
      bound[index] = next_slice(spans, order, end);
      continue;
    }
    for (; next < order.size() && !track_less(probe, spans[order[next]]) && spans[order[next]].start_ns <= end.ts_ns;
         ++next) {
      const Span& starting = spans[order[next]];
      while (!open.empty() && spans[open.back()].end_ns < starting.start_ns) open.pop_back();
      open.push_back(order[next]);
    }
    while (!open.empty() && spans[open.back()].end_ns < end.ts_ns) open.pop_back();
    if (!open.empty()) bound[index] = open.back();
  }
  return bound;
}

}  // namespace

FlowBindingCounts bind_flows(const std::vector<Span>& spans, const std::vector<FlowEndpoint>& endpoints,
                             std::vector<Flow>& flows) {
  FlowBindingCounts counts;
  if (endpoints.empty()) return counts;  // spares sorting every span
  std::vector<SpanId> bound = bind_endpoints(spans, endpoints);
  // Group bound endpoints by flow, starts before ends, each in time order.
  std::vector<uint32_t> order;
  order.reserve(endpoints.size());
  for (uint32_t i = 0; i < endpoints.size(); ++i) {
    if (bound[i] == kNoSpan) {
      ++counts.unbound;
    } else {
      order.push_back(i);
    }
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const FlowEndpoint& x = endpoints[a];
    const FlowEndpoint& y = endpoints[b];
    return std::tuple(x.kind, x.id_is_text, x.id, !x.is_start, x.ts_ns, a) <
           std::tuple(y.kind, y.id_is_text, y.id, !y.is_start, y.ts_ns, b);
  });
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() && same_flow(endpoints[order[end]], endpoints[order[begin]])) ++end;
    // One start may feed several ends (one launch, several kernels); an end
    // pairs with the latest start at or before it, else with the first.
    size_t starts_end = begin;
    while (starts_end < end && endpoints[order[starts_end]].is_start) ++starts_end;
    if (starts_end == begin || starts_end == end) counts.unpaired += end - begin;
    size_t s = begin;
    for (size_t f = starts_end; f < end && starts_end > begin; ++f) {
      while (s + 1 < starts_end && endpoints[order[s + 1]].ts_ns <= endpoints[order[f]].ts_ns) ++s;
      flows.push_back(Flow{bound[order[s]], bound[order[f]], endpoints[order[f]].kind});
    }
    begin = end;
  }
  return counts;
}

}  // namespace stepscope
