// What a Run's spans hold, counted in one pass: the tracks (pid, tid) with
// their spans by class, the spans of each kind, and the ids of the kinds
// that are rare in a trace and that the steps and the diagnosis look for
// (steps and their phases, data waits, markers of kind other). The analyses
// that need only those read a few ids instead of passing over millions of
// spans; `report` takes it in the host span index's one pass over the spans.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct CensusTrack {
  int64_t pid = 0;
  int64_t tid = 0;
  size_t spans = 0;
  size_t device = 0;  // runs_on_device
  size_t other = 0;   // SpanKind::kOther
  // The spans the host span index holds (is_host_span: kOther included, as
  // a profile or ops may look at them).
  size_t not_on_device() const { return spans - device; }
  // The host's work: neither device activity nor kOther (a trace's own
  // bookkeeping such as Kineto's "Trace" range, unknown categories). A track
  // or process with none is no CPU thread's, whatever kOther spans it holds:
  // what the process summary's roles and the span profile both decide by.
  size_t host_work() const { return spans - device - other; }
};

class SpanCensus {
 public:
  SpanCensus();
  explicit SpanCensus(const Run& run);  // a pass of its own

  // Counts span `id` (spans are added in trace order); returns its track's
  // number, numbered in order of first appearance. Inline: called per span.
  uint32_t add(SpanId id, const Span& span) {
    uint32_t number = track_number(span);
    CensusTrack& track = tracks_[number];
    track.spans++;
    track.device += on_device(span.kind);
    track.other += span.kind == SpanKind::kOther;
    by_kind_[static_cast<size_t>(span.kind)]++;
    if (is_rare(span.kind)) ids_[static_cast<size_t>(span.kind)].push_back(id);
    return number;
  }
  // The number of the track of a span added before. Consecutive spans are
  // mostly on one track: the last lookup is remembered.
  uint32_t track_number(const Span& span) {
    if (last_number_ != UINT32_MAX && span.pid == last_.pid && span.tid == last_.tid) return last_number_;
    return look_up(span);
  }

  const std::vector<CensusTrack>& tracks() const { return tracks_; }
  // runs_on_device(kind), from a table: for callers that ask per span.
  bool on_device(SpanKind kind) const { return on_device_[static_cast<size_t>(kind)]; }
  size_t count(SpanKind kind) const { return by_kind_[static_cast<size_t>(kind)]; }
  // The ids of a rare kind in trace order: kStep, kDataWait, kForward,
  // kBackward, kOptimizer or kOther (any other kind: an empty list).
  const std::vector<SpanId>& ids(SpanKind kind) const { return ids_[static_cast<size_t>(kind)]; }

 private:
  struct TrackKey {
    int64_t pid;
    int64_t tid;
    bool operator==(const TrackKey&) const = default;
  };
  struct TrackKeyHash {
    size_t operator()(const TrackKey& k) const { return std::hash<int64_t>()(k.pid) * 31 + std::hash<int64_t>()(k.tid); }
  };
  static bool is_rare(SpanKind kind) {
    return kind == SpanKind::kStep || kind == SpanKind::kDataWait || kind == SpanKind::kForward ||
           kind == SpanKind::kBackward || kind == SpanKind::kOptimizer || kind == SpanKind::kOther;
  }
  uint32_t look_up(const Span& span);

  // runs_on_device by kind, asked once per kind, not called per span.
  std::array<bool, kSpanKindCount> on_device_{};
  std::vector<CensusTrack> tracks_;
  std::unordered_map<TrackKey, uint32_t, TrackKeyHash> number_of_;
  TrackKey last_{};
  uint32_t last_number_ = UINT32_MAX;
  std::array<size_t, kSpanKindCount> by_kind_{};
  std::array<std::vector<SpanId>, kSpanKindCount> ids_;
};

}  // namespace stepscope
