// What the recorder's tree scan (every 50 ms) costs with and without a fork:
// BM_TreeWalk walks this process's tree (its task folder and every thread's
// `children`) as a scan did every time before the ForkGate; BM_ForkGateRead
// is the read of /proc/loadavg that now decides whether to walk. The
// 32-thread variant gives the process 32 more threads that sleep, as a
// training process's data-loader, pin-memory and library threads mostly do:
// a walk reads one `children` file per thread. Hot loops: at 20 Hz each read
// also pays for caches gone cold since the last (bench/README.md, seventh round).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <future>
#include <thread>
#include <vector>

#include "collectors/process/fork_gate.hpp"
#include "collectors/process/tree_scanner.hpp"

namespace stepscope {
namespace {

void walk(benchmark::State& state) {
  ProcessTreeScanner scanner;
  for (auto _ : state) benchmark::DoNotOptimize(scanner.scan(::getpid()));
}

void BM_TreeWalk(benchmark::State& state) { walk(state); }
BENCHMARK(BM_TreeWalk)->Unit(benchmark::kMicrosecond);

void BM_TreeWalk32SleepingThreads(benchmark::State& state) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::thread> sleepers;
  for (int i = 0; i < 32; ++i) sleepers.emplace_back([released] { released.wait(); });
  walk(state);
  release.set_value();
  for (std::thread& t : sleepers) t.join();
}
BENCHMARK(BM_TreeWalk32SleepingThreads)->Unit(benchmark::kMicrosecond);

void BM_ForkGateRead(benchmark::State& state) {
  ForkGate gate;
  for (auto _ : state) benchmark::DoNotOptimize(gate.must_walk());
}
BENCHMARK(BM_ForkGateRead)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepscope
