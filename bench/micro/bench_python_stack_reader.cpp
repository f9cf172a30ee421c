// The cost of one PythonProcess::sample() on a 30-frame-deep stack, against
// the floor of one bare process_vm_readv.
//
// The target is a real Python child (STEPSCOPE_BENCH_PYTHON, default
// /usr/bin/python3) that recurses to depth 30 and spins there, as a training
// loop keeps its stack while running.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collectors/process/memory_maps.hpp"
#include "collectors/python/process.hpp"
#include "python_child.hpp"

namespace stepscope {
namespace {

using bench::PythonChild;

// Attaches once the child's stack has reached its full depth.
std::unique_ptr<PythonProcess> attach_when_deep(const PythonChild& child, size_t depth,
                                                std::string& why) {
  std::vector<PythonThreadStack> stacks;
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto process = PythonProcess::attach(child.pid(), &why);
    if (process && process->sample(stacks) && !stacks.empty() && stacks[0].frames.size() >= depth) {
      return process;
    }
  }
  return nullptr;
}

void BM_PythonSample30Deep(benchmark::State& state) {
  PythonChild child;
  std::string why;
  auto process = attach_when_deep(child, 30, why);
  if (!process) {
    state.SkipWithError(("no 30-deep Python target: " + why).c_str());
    return;
  }
  std::vector<PythonThreadStack> stacks;
  size_t errors = 0;
  const uint64_t reads_before = process->memory_reads();
  for (auto _ : state) {
    if (!process->sample(stacks)) ++errors;
    benchmark::DoNotOptimize(stacks.data());
  }
  state.counters["errors"] = static_cast<double>(errors);
  state.counters["reads"] = benchmark::Counter(
      static_cast<double>(process->memory_reads() - reads_before), benchmark::Counter::kAvgIterations);
  state.counters["frames"] = stacks.empty() ? 0.0 : static_cast<double>(stacks[0].frames.size());
  state.SetLabel("Python " + process->version());
}
BENCHMARK(BM_PythonSample30Deep)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The floor: one process_vm_readv of 4 KiB (about what a 30-deep 3.11+ stack
// occupies in its data-stack chunk) from the same kind of target's heap.
void BM_BareProcessVmReadv(benchmark::State& state) {
  PythonChild child;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string why;
  auto process = PythonProcess::attach(child.pid(), &why);
  if (!process) {
    state.SkipWithError(("no Python target: " + why).c_str());
    return;
  }
  ProcessMemory memory(child.pid());
  std::vector<char> buffer(4096);
  uint64_t address = 0;
  auto mappings = read_memory_maps(child.pid()).value_or(std::vector<MemoryMapping>{});
  for (const MemoryMapping& mapping : mappings) {
    if (mapping.path == "[heap]") address = mapping.start;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(memory.read(address, buffer.data(), buffer.size()));
  }
}
BENCHMARK(BM_BareProcessVmReadv)->Unit(benchmark::kMicrosecond)->UseRealTime();

// What each attach costs, once per process of a recorded tree (every
// DataLoader worker): the maps, the ELF symbols of libpython (one pass over
// each table; an unstripped pyenv libpython has 15 000 symbols:
// STEPSCOPE_BENCH_PYTHON=/root/.pyenv/versions/3.12.1/bin/python3.12), the
// version and the layout. CPU time of this thread.
void BM_AttachPython(benchmark::State& state) {
  PythonChild child;
  std::string why;
  if (!attach_when_deep(child, 30, why)) {
    state.SkipWithError(("no Python target: " + why).c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(PythonProcess::attach(child.pid(), &why));
}
BENCHMARK(BM_AttachPython)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepscope
