// The cost of one poll of the system monitor: the machine's counters, the
// memory cgroup and one process (this one), without GPUs (which would
// measure NVML, not the monitor), except in BM_SysmonPollAsRecordedWithGpus,
// which adds the machine's GPUs through NVML as `record` reads them (skipped
// where there is none). BM_SysmonPoll reads everything at each
// poll, as `monitor` does; BM_SysmonPollAsRecorded polls as `record` does,
// on a clock that advances 100 ms per poll, so that its slow counters are
// read at every tenth. The 32-thread variants give the process 32 more
// threads that sleep, as a training process's data-loader, pin-memory and
// library threads mostly do.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "collectors/sysmon/source.hpp"
#include "collectors/sysmon/sysmon.hpp"

namespace stepscope {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

// `as_recorded`: record's options, and a clock of 10 polls a second.
void poll_loop(benchmark::State& state, bool as_recorded, bool with_gpus = false) {
  SysmonOptions options = as_recorded ? SysmonSource::recording_options() : SysmonOptions{};
  options.gpus = with_gpus;
  Sysmon sysmon(options);
  if (with_gpus && !sysmon.gpu_absent_reason().empty()) {
    state.SkipWithError(sysmon.gpu_absent_reason().c_str());
    return;
  }
  const std::vector<pid_t> pids{::getpid()};
  int64_t now = steady_ns();
  auto next_time = [&] { return as_recorded ? now += 100'000'000 : steady_ns(); };
  sysmon.sample(next_time(), pids);  // primes the rates
  for (auto _ : state) {
    SysmonSample sample = sysmon.sample(next_time(), pids);
    benchmark::DoNotOptimize(sample);
  }
}

void with_sleeping_threads(benchmark::State& state, bool as_recorded) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::thread> sleepers;
  for (int i = 0; i < 32; ++i) sleepers.emplace_back([released] { released.wait(); });
  poll_loop(state, as_recorded);
  release.set_value();
  for (std::thread& t : sleepers) t.join();
}

void BM_SysmonPoll(benchmark::State& state) { poll_loop(state, false); }
BENCHMARK(BM_SysmonPoll)->Unit(benchmark::kMicrosecond);

void BM_SysmonPoll32SleepingThreads(benchmark::State& state) { with_sleeping_threads(state, false); }
BENCHMARK(BM_SysmonPoll32SleepingThreads)->Unit(benchmark::kMicrosecond);

void BM_SysmonPollAsRecorded(benchmark::State& state) { poll_loop(state, true); }
BENCHMARK(BM_SysmonPollAsRecorded)->Unit(benchmark::kMicrosecond);

void BM_SysmonPollAsRecordedWithGpus(benchmark::State& state) { poll_loop(state, true, true); }
BENCHMARK(BM_SysmonPollAsRecordedWithGpus)->Unit(benchmark::kMicrosecond);

void BM_SysmonPollAsRecorded32SleepingThreads(benchmark::State& state) { with_sleeping_threads(state, true); }
BENCHMARK(BM_SysmonPollAsRecorded32SleepingThreads)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepscope
