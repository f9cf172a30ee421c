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
#pragma once

#include <vector>

#include "analyses/steps/phase_index.hpp"
#include "analyses/steps/steps.hpp"
#include "run/run.hpp"

namespace stepscope {

// Sets collective_wait_fraction of each of `processes` that has samples in
// its steady steps.
void measure_collective_waits(const Run& run, const PhaseIndex& phases, std::vector<ProcessSteps>& processes);

}  // namespace stepscope
