// The Run's hot paths during recording: interning, stack pushes, commits.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "analyses/profile.hpp"
#include "run/run_file.hpp"

namespace stepscope {
namespace {

// A recording-like run: `threads` threads sampling stacks drawn from a fixed
// set of call paths, as a training loop revisits the same code every step.
Run make_sampled_run(size_t samples, int threads) {
  Run run;
  run.metadata["sample_period_ns"] = "10000000";
  std::mt19937 rng(42);
  std::vector<StackId> paths;
  for (int p = 0; p < 2000; ++p) {
    std::vector<FrameId> frames;
    int depth = 10 + p % 30;
    for (int d = 0; d < depth; ++d) {
      frames.push_back(run.intern_frame("fn" + std::to_string((p * 7 + d) % 400),
                                        "/site-packages/torch/mod" + std::to_string(d) + ".py",
                                        d * 13 + 1));
    }
    paths.push_back(run.stacks.intern(frames));
  }
  for (size_t i = 0; i < samples; ++i) {
    auto tid = static_cast<int32_t>(i % static_cast<size_t>(threads));
    run.samples.push_back({static_cast<int64_t>(i) * 1000, 1, tid, paths[rng() % paths.size()],
                           ThreadState::kRunning});
  }
  return run;
}

// A second of a recorder's counters: 20 tracks at 10 Hz (what `record`
// writes for a small tree, docs/monitor.md), some steady (memory, limits),
// some moving (CPU percentages).
void add_counter_second(Run& run, int64_t second) {
  if (run.counter_tracks.empty()) {
    for (int t = 0; t < 20; ++t) {
      run.counter_tracks.push_back({run.strings.intern("track" + std::to_string(t)), 1, run.strings.intern("unit")});
    }
  }
  for (int64_t tenth = 0; tenth < 10; ++tenth) {
    int64_t ts = second * 1'000'000'000 + tenth * 100'000'000;
    for (CounterTrackId track = 0; track < 20; ++track) {
      double moving = static_cast<double>((second * 37 + tenth * 11 + track) % 1000) / 10;
      double value = track % 2 == 0 ? 1.5e9 + track : moving;
      run.counter_values.push_back({track, ts + track * 1000, value});
    }
  }
}

// A second of a training loop's step spans: 50 steps of 20 ms, each with
// its data wait, forward, backward and optimizer, written as they end.
void add_step_second(Run& run, int64_t second) {
  const StringId step = run.strings.intern("step"), phase = run.strings.intern("phase");
  for (int64_t i = 0; i < 50; ++i) {
    int64_t start = second * 1'000'000'000 + i * 20'000'000 + (i * 7919 % 1000);
    int64_t data = start + 1'000'000, forward = data + 5'000'000, backward = forward + 10'000'000;
    run.spans.push_back({start, data, 1, 1, SpanKind::kDataWait, phase});
    run.spans.push_back({data, forward, 1, 1, SpanKind::kForward, phase});
    run.spans.push_back({forward, backward, 1, 1, SpanKind::kBackward, phase});
    run.spans.push_back({backward, backward + 3'000'000, 1, 1, SpanKind::kOptimizer, phase});
    run.spans.push_back({start, backward + 3'000'000, 1, 1, SpanKind::kStep, step});
  }
}

void BM_StringIntern(benchmark::State& state) {
  std::vector<std::string> names;
  for (int i = 0; i < 4096; ++i) names.push_back("module.function_" + std::to_string(i));
  StringTable table;
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(table.intern(names[i++ & 4095]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StringIntern);

void BM_StackIntern(benchmark::State& state) {
  Run run;
  std::vector<FrameId> frames;
  for (int d = 0; d < 40; ++d) frames.push_back(run.intern_frame("f" + std::to_string(d), "x.py", d));
  for (auto _ : state) benchmark::DoNotOptimize(run.stacks.intern(frames));
  state.SetItemsProcessed(state.iterations() * 40);  // frames pushed
}
BENCHMARK(BM_StackIntern);

void BM_SaveRun(benchmark::State& state) {
  Run run = make_sampled_run(static_cast<size_t>(state.range(0)), 8);
  auto path = std::filesystem::temp_directory_path() / "stepscope-bench-save.db";
  for (auto _ : state) save_run(run, path.string());
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SaveRun)->Arg(100000)->Unit(benchmark::kMillisecond);

// What the recorder pays once a second at 1 kHz: a commit of 1000 new
// samples (a few of them on new stacks), 200 counter values, 250 step spans
// and the small mutable tables, with
// `max_bytes` (record --max-size) the check and, once the file is over it,
// the trims: the recorder's loop, samples released after each commit.
void commit_seconds(benchmark::State& state, uint64_t max_bytes) {
  Run run = make_sampled_run(1000, 1);
  run.add_process(1, "python train.py", 0);
  run.add_thread(1, 1, "MainThread");
  auto path = std::filesystem::temp_directory_path() / "stepscope-bench-commit.db";
  {
    RunWriter writer(path.string());
    if (max_bytes > 0) writer.limit_size(max_bytes);
    writer.commit(run);
    writer.release_written(run);
    int64_t second = 1;
    StackId stack = StackTree::kRoot;
    for (auto _ : state) {
      for (int i = 0; i < 1000; ++i) {
        if (i % 100 == 0 || stack == StackTree::kRoot) {
          stack = run.stacks.push(StackTree::kRoot, run.intern_frame("new" + std::to_string(second), "x.py", i));
        }
        run.samples.push_back({second * 1'000'000'000 + i * 1'000'000, 1, 1, stack, ThreadState::kRunning});
      }
      add_counter_second(run, second);
      add_step_second(run, second);
      writer.commit(run);
      writer.trim_to_limit(run);
      writer.release_written(run);
      ++second;
    }
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * 1000);
  if (auto trimmed = run.metadata_int("trimmed_samples")) {
    state.counters["trimmed_share"] = static_cast<double>(*trimmed) / static_cast<double>(state.iterations() * 1000);
  }
}

void BM_CommitOneSecond(benchmark::State& state) { commit_seconds(state, 0); }
BENCHMARK(BM_CommitOneSecond)->Unit(benchmark::kMicrosecond);

// The same under --max-size 1M, the least: the file reaches it after about
// a thousand seconds of this load, then trims every few hundred commits.
void BM_CommitOneSecondUnderMaxSize(benchmark::State& state) { commit_seconds(state, uint64_t{1} << 20); }
BENCHMARK(BM_CommitOneSecondUnderMaxSize)->Unit(benchmark::kMicrosecond)->MinTime(3);

// What each recording pays once at its start: the run file removed and
// created anew with its schema (written without a journal or syncs).
void BM_CreateRunFile(benchmark::State& state) {
  auto path = std::filesystem::temp_directory_path() / "stepscope-bench-create.db";
  for (auto _ : state) RunWriter writer(path.string());
  std::filesystem::remove(path);
}
BENCHMARK(BM_CreateRunFile)->Unit(benchmark::kMicrosecond);

void BM_LoadRun(benchmark::State& state) {
  auto path = std::filesystem::temp_directory_path() / "stepscope-bench-load.db";
  save_run(make_sampled_run(static_cast<size_t>(state.range(0)), 8), path.string());
  for (auto _ : state) benchmark::DoNotOptimize(load_run(path.string()).samples.size());
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LoadRun)->Arg(100000)->Unit(benchmark::kMillisecond);

// Reading the counter values of a long recording: ARG seconds of
// add_counter_second (200 values a second), no samples.
void BM_LoadCounterValues(benchmark::State& state) {
  Run run;
  for (int64_t second = 0; second < state.range(0); ++second) add_counter_second(run, second);
  auto path = std::filesystem::temp_directory_path() / "stepscope-bench-load-counters.db";
  save_run(run, path.string());
  for (auto _ : state) benchmark::DoNotOptimize(load_run(path.string()).counter_values.size());
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(run.counter_values.size()));
}
BENCHMARK(BM_LoadCounterValues)->Arg(3600)->Unit(benchmark::kMillisecond);

// Reading the spans of a long recording: ARG seconds of add_step_second
// (250 spans a second), written a second at a time as a recorder commits.
void BM_LoadSpans(benchmark::State& state) {
  auto path = std::filesystem::temp_directory_path() / "stepscope-bench-load-spans.db";
  Run run;
  {
    RunWriter writer(path.string());
    for (int64_t second = 0; second < state.range(0); ++second) {
      add_step_second(run, second);
      writer.commit(run);
    }
  }
  for (auto _ : state) benchmark::DoNotOptimize(load_run(path.string()).spans.size());
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(run.spans.size()));
}
BENCHMARK(BM_LoadSpans)->Arg(600)->Unit(benchmark::kMillisecond);

void BM_BuildProfile(benchmark::State& state) {
  Run run = make_sampled_run(static_cast<size_t>(state.range(0)), 8);
  for (auto _ : state) benchmark::DoNotOptimize(build_profile(run).threads.size());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_BuildProfile)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope
