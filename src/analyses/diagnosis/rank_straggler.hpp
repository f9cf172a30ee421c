// rank_straggler: the ranks of a job that the others wait for, named with
// their own findings first (docs/diagnosis.md, "Ranks of a job").
#pragma once

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/job_ranks.hpp"

namespace stepscope {

// With ranks the others wait for (job.waited_for): adds a rank_straggler
// finding that names them, and puts the findings of the first of them first,
// with its own figures and "rank N, the others wait for it" in their titles.
void diagnose_stragglers(Diagnosis& diagnosis, const JobRanks& job);

}  // namespace stepscope
