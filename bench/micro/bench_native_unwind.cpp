// record --native's costs per sample: one unwind of a copied user stack in the
// steady state (every pc seen before), the first unwind in a fresh unwinder
// (the maps, the ELF files and their CFI read), and one drain of the perf
// ring buffer holding a round's samples.
//
// The target is a real Python child (STEPSCOPE_BENCH_PYTHON, default
// /usr/bin/python3) spinning 30 Python calls deep: since 3.11 its native
// stack is the evaluation loop under the interpreter's start-up, about 15
// frames, as in a training loop.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectors/native/native_unwinder.hpp"
#include "collectors/native/perf_stack_sampler.hpp"
#include "python_child.hpp"

namespace stepscope {
namespace {

constexpr int64_t kPeriodNs = 1'000'000;
constexpr uint32_t kStackBytes = 16 * 1024;

using bench::PythonChild;

// A sample taken in the evaluation loop, once the child spins there; false,
// with the benchmark skipped saying why, when perf is refused or no such
// sample comes in 5 s.
bool sample_in_eval_loop(benchmark::State& state, const PythonChild& child, UserStackSample& sample) {
  std::string why;
  auto sampler = PerfStackSampler::open(child.pid(), kPeriodNs, kStackBytes, why);
  NativeUnwinder unwinder(child.pid());
  std::vector<NativeFrame> frames;
  for (int attempt = 0; sampler && attempt < 500; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!sampler->take_newest(sample)) continue;
    UnwindResult result = unwinder.unwind(sample, frames);
    if (result.complete && !frames.empty() && frames[0].python_eval) return true;
  }
  if (sampler) why = "no complete sample in _PyEval_EvalFrameDefault in 5 s";
  state.SkipWithError(why.c_str());
  return false;
}

void BM_NativeUnwindSteady(benchmark::State& state) {
  PythonChild child;
  UserStackSample sample;
  if (!sample_in_eval_loop(state, child, sample)) return;
  NativeUnwinder unwinder(child.pid());
  std::vector<NativeFrame> frames;
  unwinder.unwind(sample, frames);  // the pcs' names cached, as after the first samples
  size_t incomplete = 0;
  for (auto _ : state) {
    if (!unwinder.unwind(sample, frames).complete) ++incomplete;
    benchmark::DoNotOptimize(frames.data());
  }
  state.counters["frames"] = static_cast<double>(frames.size());
  state.counters["incomplete"] = static_cast<double>(incomplete);
}
BENCHMARK(BM_NativeUnwindSteady)->Unit(benchmark::kMicrosecond);

// Once per process of a recorded tree: the maps, each file's ELF headers,
// symbols and CFI read as the walk first needs them.
void BM_NativeUnwindFirst(benchmark::State& state) {
  PythonChild child;
  UserStackSample sample;
  if (!sample_in_eval_loop(state, child, sample)) return;
  std::vector<NativeFrame> frames;
  for (auto _ : state) {
    NativeUnwinder unwinder(child.pid());
    benchmark::DoNotOptimize(unwinder.unwind(sample, frames));
  }
  state.counters["frames"] = static_cast<double>(frames.size());
}
BENCHMARK(BM_NativeUnwindFirst)->Unit(benchmark::kMicrosecond);

// One read of the ring after 2 ms of the child's CPU: two copies of 16 KiB
// taken meanwhile, the newest parsed. The sleep is outside the timing.
void BM_PerfTakeNewest(benchmark::State& state) {
  PythonChild child;
  std::string why;
  auto sampler = PerfStackSampler::open(child.pid(), kPeriodNs, kStackBytes, why);
  if (!sampler) {
    state.SkipWithError(why.c_str());
    return;
  }
  UserStackSample sample;
  size_t empty = 0;
  uint64_t taken_before = sampler->samples_taken();
  for (auto _ : state) {
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    state.ResumeTiming();
    if (!sampler->take_newest(sample)) ++empty;
  }
  state.counters["empty"] = static_cast<double>(empty);
  state.counters["samples"] = benchmark::Counter(static_cast<double>(sampler->samples_taken() - taken_before),
                                                 benchmark::Counter::kAvgIterations);
  state.counters["stack_bytes"] = static_cast<double>(sample.stack.size());
}
BENCHMARK(BM_PerfTakeNewest)->Unit(benchmark::kMicrosecond)->Iterations(500);

}  // namespace
}  // namespace stepscope
