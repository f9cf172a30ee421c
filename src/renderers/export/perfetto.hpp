// Chrome trace-event JSON for Perfetto (ui.perfetto.dev) and chrome://tracing
// (docs/export.md).
//
//  * "M" events name processes and threads;
//  * samples become slices: consecutive samples of a thread that share a
//    prefix of frames extend the same nested "X" slices (as py-spy's
//    chrometrace output does); a slice ends at the next sample that leaves
//    it, or one sampling period after the last sample before a gap of more
//    than two periods (the thread was not sampled: idle or gone);
//  * spans (steps, phases, user ranges, cpu ops, runtime calls, kernels and
//    copies on their device tracks) become "X" slices with Kineto's categories
//    where Kineto has one, so the file reads back into the same span kinds,
//    with correlation, bytes and the detail (input shapes, "Input Dims");
//    on a thread that also has sample slices, spans go to companion tracks
//    (tid + lane * kPerfettoLaneStride: 1 steps, 2 phases, 3 other spans),
//    since a slice track must nest and spans need not nest with samples;
//  * counter tracks become "C" events, the track name split at its last '.'
//    into event name and argument (Perfetto shows "name arg"), or the
//    argument "value" for names without a dot;
//  * flows become "s"/"f" pairs (binding to the enclosing slices) at the
//    start of the spans they link.
// Times are microseconds with three decimals, so nanoseconds survive.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "run/run.hpp"

namespace stepscope {

inline constexpr int64_t kPerfettoLaneStride = 1'000'000'000;

struct PerfettoOptions {
  bool include_idle = false;  // samples of idle threads as slices too
};

// Throws InputError when the run has samples but no valid sample period.
void write_perfetto(const Run& run, std::ostream& out, const PerfettoOptions& options = {});

// A file of several runs, added one after another, so that only one is in
// memory at a time (the runs of a job: job_timeline.hpp). Their processes
// must not share pids.
class PerfettoFile {
 public:
  PerfettoFile();
  // Throws InputError as write_perfetto does.
  void add(const Run& run, const PerfettoOptions& options = {});
  // Closes the file and writes it; call once.
  void write(std::ostream& out);

 private:
  std::string text_;
  bool empty_ = true;
};

// The Kineto category that reads back as `kind` (chrome_category_kind), or
// stepscope's own kind name for kinds Kineto does not have.
const char* perfetto_category(SpanKind kind);

}  // namespace stepscope
