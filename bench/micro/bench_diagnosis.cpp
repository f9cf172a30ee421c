// Diagnosis on a one-hour recording at 100 Hz: the report's rules must not be
// what makes `stepscope report` slow (issue 7: the whole report under 1 s).
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "analyses/diagnosis/diagnosis.hpp"

namespace stepscope {
namespace {

constexpr int64_t kMs = 1'000'000;

// One training process, 100 ms steps with the four phases, its step thread
// sampled every 10 ms over 2000 distinct 10-40-frame stacks (a tenth of them
// through logging), and 2 cores and the process at 10 Hz.
Run make_hour_run() {
  Run run;
  run.metadata["sample_period_ns"] = std::to_string(10 * kMs);
  run.add_process(1, "python train.py");
  std::mt19937 rng(42);
  std::vector<StackId> paths;
  for (int p = 0; p < 2000; ++p) {
    std::vector<FrameId> frames;
    int depth = 10 + p % 30;
    for (int d = 0; d < depth; ++d) {
      const char* file = p % 10 == 0 && d == depth - 1 ? "/usr/lib/python3.11/logging/__init__.py"
                                                       : "/site-packages/torch/mod.py";
      frames.push_back(run.intern_frame("fn" + std::to_string((p * 7 + d) % 400), file, d * 13 + 1));
    }
    paths.push_back(run.stacks.intern(frames));
  }
  StringId name = run.strings.intern("x");
  constexpr int64_t kSteps = 36'000;
  for (int64_t i = 0; i < kSteps; ++i) {
    int64_t t = i * 100 * kMs;
    run.spans.push_back({t, t + 20 * kMs, 1, 1, SpanKind::kDataWait, name});
    run.spans.push_back({t + 20 * kMs, t + 50 * kMs, 1, 1, SpanKind::kForward, name});
    run.spans.push_back({t + 50 * kMs, t + 90 * kMs, 1, 1, SpanKind::kBackward, name});
    run.spans.push_back({t + 90 * kMs, t + 100 * kMs, 1, 1, SpanKind::kOptimizer, name});
    run.spans.push_back({t, t + 100 * kMs, 1, 1, SpanKind::kStep, name});
  }
  for (int64_t t = 0; t < kSteps * 100 * kMs; t += 10 * kMs) {
    run.samples.push_back({t, 1, 1, paths[rng() % paths.size()], ThreadState::kRunning});
  }
  for (const char* track : {"cpu.0.percent", "cpu.1.percent", "process.cpu_percent"}) {
    run.counter_tracks.push_back({run.strings.intern(track), track[0] == 'p' ? 1 : 0, run.strings.intern("percent")});
  }
  for (int64_t t = 0; t < kSteps * 100 * kMs; t += 100 * kMs) {
    for (CounterTrackId track = 0; track < 3; ++track) run.counter_values.push_back({track, t, 60});
  }
  return run;
}

void BM_DiagnoseHourAt100Hz(benchmark::State& state) {
  Run run = make_hour_run();
  StepsAnalysis steps = analyze_steps(run);
  std::vector<ProcessSummary> processes = summarize_processes(run);
  for (auto _ : state) {
    Diagnosis d = diagnose({run, steps, processes});
    benchmark::DoNotOptimize(d);
  }
  state.counters["samples"] = static_cast<double>(run.samples.size());
}
BENCHMARK(BM_DiagnoseHourAt100Hz)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope
