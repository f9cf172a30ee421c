#include "analyses/window.hpp"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "analyses/compare/steps.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr double kNsPerSec = 1e9;
constexpr double kMaxSeconds = 100.0 * 365 * 24 * 3600;

// What a window may be taken from, for an error message. The steps are only
// found for it (or for a window of steps): a window of seconds needs none.
std::string describe(const TimeRange& extent, const Run& run) {
  double seconds = static_cast<double>(extent.to_ns - extent.from_ns) / kNsPerSec;
  std::string text = fmt::format("the run spans 0 to {:.3f} s", seconds);
  if (size_t steps = run_steps(run).steps.size()) text += fmt::format(" and steps 1 to {}", steps);
  return text;
}

// The field's number, or nullopt when it is empty; sets *bad when it is not a number.
template <typename Number>
std::optional<Number> parse_field(std::string_view field, bool* bad) {
  if (field.empty()) return std::nullopt;
  Number value{};
  auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size()) *bad = true;
  return value;
}

TimeRange resolve_seconds(std::string_view spec, const TimeRange& extent, bool* bad) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    *bad = true;
    return {};
  }
  auto from = parse_field<double>(spec.substr(0, colon), bad);
  auto to = parse_field<double>(spec.substr(colon + 1), bad);
  // Within a century either way: beyond that no run reaches, and the nanoseconds would overflow.
  auto absurd = [](std::optional<double> seconds) { return seconds && !(std::fabs(*seconds) < kMaxSeconds); };
  if (absurd(from) || absurd(to)) *bad = true;
  if (*bad) return {};
  auto at = [&](std::optional<double> seconds, int64_t otherwise) {
    if (!seconds) return otherwise;
    int64_t offset = std::llround(*seconds * kNsPerSec);
    // -0 and negatives count back from the end.
    return std::signbit(*seconds) ? extent.to_ns + offset : extent.from_ns + offset;
  };
  return {at(from, extent.from_ns), at(to, extent.to_ns + 1)};
}

TimeRange resolve_steps(std::string_view spec, const RunSteps& steps, bool* bad) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    *bad = true;
    return {};
  }
  auto first = parse_field<int64_t>(spec.substr(0, colon), bad).value_or(1);
  auto last = parse_field<int64_t>(spec.substr(colon + 1), bad).value_or(static_cast<int64_t>(steps.steps.size()));
  if (*bad || first < 1 || last < first || last > static_cast<int64_t>(steps.steps.size())) {
    *bad = true;
    return {};
  }
  // Step N+1 starts where step N ends: the window ends there, without it.
  return {steps.steps[first - 1].start_ns, steps.steps[last - 1].end_ns};
}

enum class Fault { kNone, kMalformed, kReversed, kOutside };

Fault fault_of(const TimeRange& window, bool malformed, const TimeRange& extent) {
  if (malformed) return Fault::kMalformed;
  if (window.from_ns >= window.to_ns) return Fault::kReversed;
  if (window.to_ns <= extent.from_ns || window.from_ns > extent.to_ns) return Fault::kOutside;
  return Fault::kNone;
}

constexpr std::string_view kSteps = "steps:";

}  // namespace

std::optional<TimeRange> resolve_seconds_window(const TimeRange& extent, std::string_view spec) {
  if (spec.starts_with(kSteps)) return std::nullopt;
  bool malformed = false;
  TimeRange window = resolve_seconds(spec, extent, &malformed);
  if (fault_of(window, malformed, extent) != Fault::kNone) return std::nullopt;
  return window;
}

TimeRange resolve_window(const Run& run, std::string_view spec) {
  std::optional<TimeRange> extent = run_extent(run);
  if (!extent) throw InputError(fmt::format("--window {}: the run holds nothing to take a window of", spec));
  bool malformed = false;
  bool by_steps = spec.starts_with(kSteps);
  TimeRange window = by_steps ? resolve_steps(spec.substr(kSteps.size()), run_steps(run), &malformed)
                              : resolve_seconds(spec, *extent, &malformed);
  switch (fault_of(window, malformed, *extent)) {
    case Fault::kNone:
      return window;
    case Fault::kMalformed:
      throw InputError(fmt::format(
          "--window {}: {}; {}", spec,
          by_steps ? "not steps:FIRST:LAST with 1 <= FIRST <= LAST <= the last step"
                   : "not FROM:TO in seconds since the run's start (negative: from its end)",
          describe(*extent, run)));
    case Fault::kReversed:
      throw InputError(fmt::format("--window {}: it ends before it starts; {}", spec, describe(*extent, run)));
    case Fault::kOutside:
      throw InputError(fmt::format("--window {}: outside the run; {}", spec, describe(*extent, run)));
  }
  return window;
}

void note_window(Run& run, std::string_view spec, const TimeRange& window) {
  run.metadata["window"] = std::string(spec);
  run.metadata["window_ns"] = fmt::format("{}:{}", window.from_ns, window.to_ns);
}

void apply_window(Run& run, std::string_view spec) {
  TimeRange window = resolve_window(run, spec);
  keep_window(run, window);
  note_window(run, spec, window);
}

}  // namespace stepscope
