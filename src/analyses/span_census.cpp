#include "analyses/span_census.hpp"

namespace stepscope {

SpanCensus::SpanCensus(const Run& run) {
  for (SpanId i = 0; i < run.spans.size(); ++i) add(i, run.spans[i]);
}

bool SpanCensus::is_rare(SpanKind kind) {
  switch (kind) {
    case SpanKind::kStep:
    case SpanKind::kDataWait:
    case SpanKind::kForward:
    case SpanKind::kBackward:
    case SpanKind::kOptimizer:
    case SpanKind::kOther:
      return true;
    default:
      return false;
  }
}

uint32_t SpanCensus::track_number(const Span& span) {
  TrackKey key{span.pid, span.tid};
  if (last_number_ == UINT32_MAX || !(key == last_)) {
    auto [found, inserted] = number_of_.try_emplace(key, static_cast<uint32_t>(tracks_.size()));
    if (inserted) tracks_.push_back({.pid = span.pid, .tid = span.tid});
    last_ = key;
    last_number_ = found->second;
  }
  return last_number_;
}

uint32_t SpanCensus::add(SpanId id, const Span& span) {
  uint32_t number = track_number(span);
  CensusTrack& track = tracks_[number];
  track.spans++;
  track.device += runs_on_device(span.kind);
  track.other += span.kind == SpanKind::kOther;
  by_kind_[static_cast<size_t>(span.kind)]++;
  if (is_rare(span.kind)) ids_[static_cast<size_t>(span.kind)].push_back(id);
  return number;
}

}  // namespace stepscope
