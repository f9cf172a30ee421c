// How much of its steps a rank spends waiting for the other ranks of its job.
// In synchronous data-parallel training every rank's step takes as long as the
// slowest rank's: the others wait for it in a collective. That wait, not the
// step time, tells the rank that holds the job up (job_ranks.hpp).
//
// From a recording's samples (a Python sampler sees no C++ frames): a sample
// of a process's step thread inside one of its steady steps is waiting when
// the thread is idle (asleep, not on a CPU) and
//  * a frame of its stack is in torch.distributed's collectives
//    (distributed_c10d.py: all_reduce, barrier, all_gather, broadcast ...), or
//  * it is in the backward phase of a process that computes on the CPU: DDP
//    all-reduces gradient buckets during backward and waits for them at its
//    end, and a CPU backward otherwise runs on this very thread, so it sleeps
//    there only to wait. A process with device memory figures (an
//    accelerator) also sleeps while its device runs the backward, so there
//    only the collectives' frames count.
// The fraction is waiting samples over the step thread's samples in steady
// steps.
//
// The samples come from the steps' walk over them (attribute_samples), which
// finds each one's step and phase once for both.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyses/steps/steps.hpp"
#include "run/run.hpp"

namespace stepscope {

class CollectiveWaits {
 public:
  CollectiveWaits(const Run& run, const std::vector<ProcessSteps>& processes);

  // Whether a sample of processes[index] inside `step` needs its phase to
  // be counted: an idle one of a process that computes on the CPU.
  bool needs_phase(size_t index, const StepRecord& step, const Sample& s) const;
  // Counts a sample of processes[index] inside `step`, in `phase` (known
  // at least where needs_phase says so).
  void add(size_t index, const StepRecord& step, const Sample& s, std::optional<StepPhase> phase);

  // Sets collective_wait_fraction of each of `processes` that had samples in
  // its steady steps.
  void store(std::vector<ProcessSteps>& processes) const;

 private:
  // Whether a stack holds a frame of torch.distributed's collectives, each
  // stack decided once (a run has thousands of stacks and many more samples).
  bool contains_collective(StackId stack);

  struct Count {
    uint64_t samples = 0;
    uint64_t waiting = 0;
  };
  const Run& run_;
  std::vector<bool> collective_file_;  // by string id
  std::vector<uint8_t> known_;         // by stack: kUnknown, kYes or kNo
  std::vector<bool> on_accelerator_;   // by process
  std::vector<Count> counts_;          // by process
};

}  // namespace stepscope
