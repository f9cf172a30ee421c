// The cost of one poll of the system monitor, as `record` runs it at 10 Hz:
// the machine's counters, the memory cgroup and one process (this one),
// without GPUs (which would measure NVML, not the monitor). The second
// benchmark gives the process 32 more threads that sleep, as a training
// process's data-loader, pin-memory and library threads mostly do.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "collectors/sysmon.hpp"

namespace stepscope {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

void poll_loop(benchmark::State& state) {
  SysmonOptions options;
  options.gpus = false;
  Sysmon sysmon(options);
  const std::vector<pid_t> pids{::getpid()};
  sysmon.sample(steady_ns(), pids);  // primes the rates
  for (auto _ : state) {
    SysmonSample sample = sysmon.sample(steady_ns(), pids);
    benchmark::DoNotOptimize(sample);
  }
}

void BM_SysmonPoll(benchmark::State& state) { poll_loop(state); }
BENCHMARK(BM_SysmonPoll)->Unit(benchmark::kMicrosecond);

void BM_SysmonPoll32SleepingThreads(benchmark::State& state) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::thread> sleepers;
  for (int i = 0; i < 32; ++i) sleepers.emplace_back([released] { released.wait(); });
  poll_loop(state);
  release.set_value();
  for (std::thread& t : sleepers) t.join();
}
BENCHMARK(BM_SysmonPoll32SleepingThreads)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepscope
