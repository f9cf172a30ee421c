#include "run/trimmed_run.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/byte_size.hpp"

namespace stepscope {

std::optional<Trimming> run_trimming(const Run& run) {
  std::optional<int64_t> before = run.metadata_int(trim_keys::kTrimmedBeforeNs);
  if (!before) return std::nullopt;
  auto count = [&run](const char* key) { return run.metadata_int(key).value_or(0); };
  Trimming trimming;
  trimming.max_size_bytes = static_cast<uint64_t>(std::max<int64_t>(count(trim_keys::kMaxSizeBytes), 0));
  trimming.before_ns = *before;
  if (auto start = run.metadata_int("start_clock_ns")) {
    trimming.seconds_dropped = static_cast<double>(*before - *start) / 1e9;
  }
  trimming.samples = count(trim_keys::kSamples);
  trimming.spans = count(trim_keys::kSpans);
  trimming.flows = count(trim_keys::kFlows);
  trimming.counter_values = count(trim_keys::kCounterValues);
  return trimming;
}

std::string describe_trimming(const Trimming& trimming) {
  std::string what = trimming.seconds_dropped
                         ? fmt::format("the recording's first {:.1f} s", *trimming.seconds_dropped)
                         : fmt::format("the data before {} ns", trimming.before_ns);
  return fmt::format("trimmed to {} (--max-size): {} dropped ({} samples, {} spans, {} counter values)",
                     describe_byte_size(trimming.max_size_bytes), what, trimming.samples, trimming.spans,
                     trimming.counter_values);
}

}  // namespace stepscope
