// The native half of `record --native` for one process: a perf event per
// thread copies its registers and stack while it runs, and each round the
// newest copy is unwound and merged with the Python stack the sampler read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/native/native_unwinder.hpp"
#include "collectors/native/perf_stack_sampler.hpp"
#include "collectors/native/stack_merge.hpp"
#include "collectors/python/stack_reader.hpp"
#include "run/run.hpp"

namespace stepscope {

struct NativeStackStats {
  uint64_t merged = 0;      // samples whose native and Python stacks were merged
  uint64_t unmerged = 0;    // samples that kept both parts behind a marker
  uint64_t incomplete = 0;  // unwinds that stopped before the thread's outermost frame
  uint64_t refused_threads = 0;
  uint64_t symbol_indexes = 0;  // symbol tables indexed: once per file build for the whole tree
  std::string first_problem;  // why some native stacks are missing: the first refusal, in words
};

// The copy of a thread's stack the kernel takes is this many bytes above
// its stack pointer: deep enough for the C frames of a PyTorch step on
// 3.8-3.10, whose evaluation loop makes one C frame per Python frame.
inline constexpr uint32_t kNativeStackBytes = 32 * 1024;
// A copy after each millisecond of a thread's CPU time: the newest, which a
// round merges with the Python stack it reads, is at most that old in the
// thread's own time (record uses half its period when that is shorter).
inline constexpr int64_t kNativeCopyPeriodNs = 1'000'000;

class NativeStacks {
 public:
  using PythonFrameId = std::function<FrameId(const PythonFrame&)>;

  // `period_ns`: of each thread's CPU time, between two copies. Counts go
  // to `stats`, and symbols are looked up in `indexes`, which the sampler
  // shares among its processes.
  NativeStacks(pid_t pid, int64_t period_ns, Run& run, NativeStackStats& stats,
               std::shared_ptr<SymbolIndexes> indexes);
  ~NativeStacks();

  // Begins a round of the sampler; threads not sampled in it are let go at the next.
  void begin_round();
  // The merged stack of `python`'s thread at its newest copy, interned into
  // the run; kRoot when it has none. A thread with no copy since the last
  // round ran for less than a period of CPU time since its last copy, which
  // is then as fresh as a new one would be: a `running` thread (one that
  // waits for a CPU, on a busy machine) keeps it. `python_frame` interns a
  // Python frame.
  StackId merged_stack(const PythonThreadStack& python, bool running, const PythonFrameId& python_frame);

 private:
  struct Thread {
    std::unique_ptr<PerfStackSampler> perf;
    uint64_t round = 0;
    std::vector<NativeFrame> frames;  // of its newest copy, innermost first
    bool complete = false;            // that copy's walk reached the outermost frame
    bool unwound = false;             // some copy was
  };
  Thread* thread(int64_t tid);
  FrameId native_frame(const NativeFrame& frame);
  StackId intern(const PythonThreadStack& python, const Thread& thread, const PythonFrameId& python_frame);

  int64_t period_ns_;
  Run& run_;
  NativeUnwinder unwinder_;
  std::unordered_map<int64_t, Thread> threads_;
  std::unordered_map<uint64_t, FrameId> frames_;  // by pc
  FrameId unmerged_marker_;
  uint64_t round_ = 0;
  // Reused from sample to sample.
  UserStackSample sample_;
  std::vector<MergedFrame> merged_;
  NativeStackStats& stats_;
};

}  // namespace stepscope
