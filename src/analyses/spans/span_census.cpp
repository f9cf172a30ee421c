#include "analyses/spans/span_census.hpp"

namespace stepscope {

SpanCensus::SpanCensus() {
  for (size_t kind = 0; kind < on_device_.size(); ++kind) {
    on_device_[kind] = runs_on_device(static_cast<SpanKind>(kind));
  }
}

SpanCensus::SpanCensus(const Run& run) : SpanCensus() {
  for (SpanId i = 0; i < run.spans.size(); ++i) add(i, run.spans[i]);
}

uint32_t SpanCensus::look_up(const Span& span) {
  TrackKey key{span.pid, span.tid};
  auto [found, inserted] = number_of_.try_emplace(key, static_cast<uint32_t>(tracks_.size()));
  if (inserted) tracks_.push_back({.pid = span.pid, .tid = span.tid});
  last_ = key;
  last_number_ = found->second;
  return last_number_;
}

}  // namespace stepscope
