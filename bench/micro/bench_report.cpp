// `report` and `report --html` on a synthetic one-hour recording at 100 Hz:
// the time to analyse and render, and the size of the HTML page (issue 7's
// targets: under one second, under 5 MB). Figures in bench/README.md.
#include <benchmark/benchmark.h>

#include <random>
#include <sstream>

#include "analyses/counter_series.hpp"
#include "analyses/flame_tree.hpp"
#include "analyses/report.hpp"
#include "renderers/report/html.hpp"
#include "renderers/report/json.hpp"

namespace stepscope {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kHour = 3600 * kSecond;
constexpr int64_t kPeriod = kSecond / 100;   // 100 Hz sampling
constexpr int64_t kStep = kSecond / 4;       // 14,400 steps
constexpr int64_t kCounterPeriod = kSecond / 10;  // counters at 10 Hz, as record writes them

// Call paths of a training loop: a few hundred distinct stacks per phase,
// 10 to 40 frames deep, over 600 functions with varying lines.
std::vector<StackId> make_paths(Run& run, std::mt19937& rng, const std::string& phase, int count) {
  std::vector<FrameId> prefix = {run.intern_frame("<module>", "train.py", 1), run.intern_frame("main", "train.py", 400),
                                 run.intern_frame(phase, "train.py", 420)};
  std::vector<StackId> paths;
  for (int p = 0; p < count; ++p) {
    std::vector<FrameId> frames = prefix;
    int depth = 7 + static_cast<int>(rng() % 30);
    for (int d = 0; d < depth; ++d) {
      int fn = static_cast<int>(rng() % 600);
      frames.push_back(run.intern_frame("fn" + std::to_string(fn), "/site-packages/torch/mod" + std::to_string(fn % 40) + ".py",
                                        static_cast<int32_t>(1 + rng() % 5)));
    }
    paths.push_back(run.stacks.intern(frames));
  }
  return paths;
}

// One training process (main thread and a pin-memory thread) and one
// DataLoader worker process, sampled for an hour; a step every 250 ms with
// its four phases; 35 counter tracks at 10 Hz.
Run make_hour_run() {
  Run run;
  std::mt19937 rng(7);
  run.metadata["sample_period_ns"] = std::to_string(kPeriod);
  run.add_process(100, "python train.py");
  run.add_process(101, "python train.py (worker)", 100);
  run.add_thread(100, 100, "MainThread");
  run.add_thread(100, 102, "pin_memory");
  run.add_thread(101, 101, "worker 0");
  const char* phases[] = {"data_wait", "forward", "backward", "optimizer"};
  const SpanKind kinds[] = {SpanKind::kDataWait, SpanKind::kForward, SpanKind::kBackward, SpanKind::kOptimizer};
  const int64_t ends[] = {kStep / 5, kStep / 2, kStep * 9 / 10, kStep};  // phase boundaries within a step
  std::vector<std::vector<StackId>> paths;
  for (const char* phase : phases) paths.push_back(make_paths(run, rng, phase, 300));
  std::vector<StackId> worker_paths = make_paths(run, rng, "__getitem__", 300);
  StringId step_name = run.strings.intern("step");
  for (int64_t start = 0; start + kStep <= kHour; start += kStep) {
    run.spans.push_back({start, start + kStep, 100, 100, SpanKind::kStep, step_name});
    int64_t from = start;
    for (int p = 0; p < 4; ++p) {
      run.spans.push_back({from, start + ends[p], 100, 100, kinds[p], run.strings.intern(phases[p])});
      from = start + ends[p];
    }
  }
  for (int64_t ts = 0; ts < kHour; ts += kPeriod) {
    int64_t within = ts % kStep;
    size_t phase = within < ends[0] ? 0 : within < ends[1] ? 1 : within < ends[2] ? 2 : 3;
    run.samples.push_back({ts, 100, 100, paths[phase][rng() % 300], ThreadState::kRunning});
    run.samples.push_back({ts + 1000, 100, 102, paths[0][rng() % 20], ThreadState::kIdle});
    run.samples.push_back({ts + 2000, 101, 101, worker_paths[rng() % 300], ThreadState::kRunning});
  }
  for (int t = 0; t < 35; ++t) {
    run.counter_tracks.push_back({run.strings.intern("cpu." + std::to_string(t) + ".percent"), 0, run.strings.intern("percent")});
  }
  for (int64_t ts = 0; ts < kHour; ts += kCounterPeriod) {
    for (CounterTrackId t = 0; t < 35; ++t) run.counter_values.push_back({t, ts, static_cast<double>(rng() % 1000) / 10});
  }
  return run;
}

const Run& hour_run() {
  static const Run run = make_hour_run();
  return run;
}

void BM_ReportJsonOneHour(benchmark::State& state) {
  const Run& run = hour_run();
  size_t bytes = 0;
  for (auto _ : state) {
    Report report = build_report(run, "hour.db", {});
    std::ostringstream out;
    write_report_json(report, out);
    bytes = out.str().size();
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
  state.counters["samples"] = static_cast<double>(run.samples.size());
}
BENCHMARK(BM_ReportJsonOneHour)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ReportHtmlOneHour(benchmark::State& state) {
  const Run& run = hour_run();
  size_t bytes = 0;
  for (auto _ : state) {
    Report report = build_report(run, "hour.db", {});
    Profile profile = build_profile(run);
    FlameTree flame = build_flame_tree(run, profile);
    std::vector<CounterSeries> counters = build_counter_series(run);
    std::ostringstream out;
    write_report_html({.report = report, .profile = profile, .flame = flame, .counters = counters}, out);
    bytes = out.str().size();
  }
  state.counters["html_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ReportHtmlOneHour)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace stepscope
