// `--window`: which part of a run to look at, as the user writes it.
//
//   FROM:TO              seconds since the run's start; negative counts back
//                        from its end; either may be left out (`-600:` is the
//                        last ten minutes, `:60` the first minute)
//   steps:FIRST:LAST     the main training process's steps FIRST to LAST,
//                        numbered from 1 as report and mlflow number them
#pragma once

#include <optional>
#include <string_view>

#include "run/run.hpp"
#include "run/run_window.hpp"

namespace stepscope {

// The window on the run's clock. Throws InputError, naming the run's time
// range (and its steps), when `spec` is malformed, reversed, or outside it.
TimeRange resolve_window(const Run& run, std::string_view spec);

// The window of seconds `spec` names on a run spanning `extent` (a run
// file's, read without the run); nullopt for a window of steps, which needs
// the run's steps, and for one resolve_window refuses (it then says why).
std::optional<TimeRange> resolve_seconds_window(const TimeRange& extent, std::string_view spec);

// Notes in the run's metadata the window it was cut to: `window`, the spec,
// and `window_ns`, FROM:TO on the run's clock.
void note_window(Run& run, std::string_view spec, const TimeRange& window);

// Resolves `spec`, keeps only that window of `run` and notes it.
void apply_window(Run& run, std::string_view spec);

}  // namespace stepscope
