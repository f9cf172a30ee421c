// What a run trimmed by `record --max-size` says of it (docs/run-format.md,
// "Trimming"): the metadata keys the trimmer writes (run_trimmer.hpp), and
// them read back, for the recorder's summary, reports and window errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "run/run.hpp"

namespace stepscope {

namespace trim_keys {
inline constexpr const char* kMaxSizeBytes = "max_size_bytes";
inline constexpr const char* kTrimmedBeforeNs = "trimmed_before_ns";
inline constexpr const char* kSamples = "trimmed_samples";
inline constexpr const char* kSpans = "trimmed_spans";
inline constexpr const char* kFlows = "trimmed_flows";
inline constexpr const char* kCounterValues = "trimmed_counter_values";
}  // namespace trim_keys

struct Trimming {
  uint64_t max_size_bytes = 0;
  int64_t before_ns = 0;  // the run holds what was recorded from here on
  // How far into the recording before_ns lies (from start_clock_ns), when the run says where it started.
  std::optional<double> seconds_dropped;
  // Rows deleted from the file; rows left there before before_ns are left out when it is read, uncounted.
  int64_t samples = 0, spans = 0, flows = 0, counter_values = 0;
};

// Nullopt for a run that was never trimmed.
std::optional<Trimming> run_trimming(const Run& run);

// "trimmed to 1 MiB (--max-size): the recording's first 13.0 s dropped
// (12966 samples, 23103 spans, 37377 counter values)".
std::string describe_trimming(const Trimming& trimming);

}  // namespace stepscope
