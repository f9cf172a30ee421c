// The Prometheus text exposition format (version 0.0.4) of a recording in
// progress: what `record --metrics` serves at /metrics and `--metrics-textfile`
// writes for node_exporter's textfile collector (docs/metrics.md lists the
// metrics). Base units, `_total` for counters, ratios 0..1; per process that
// steps, labels `rank` and `local_rank` when its hooks reported them (else
// `pid`), and on every series the constant labels `host` and `job` when known.
#pragma once

#include <cstdint>
#include <string>

#include "analyses/live_counters.hpp"
#include "analyses/live_steps.hpp"
#include "collectors/sampler.hpp"
#include "run/run.hpp"

namespace stepscope {

struct ExpositionContext {
  std::string host{};  // empty: no such label
  std::string job{};
  int64_t unix_minus_run_clock_ns = 0;  // turns the run's (monotonic) clock into Unix time
  double recording_seconds = 0;         // since the recording started
};

std::string prometheus_exposition(const Run& run, const LiveSteps& steps, const LiveGauges& gauges,
                                  const SamplerStats& stats, const ExpositionContext& context);

// A label value as the format wants it: valid UTF-8, with `\`, `"` and newlines escaped.
std::string prometheus_label_value(std::string_view text);

}  // namespace stepscope
