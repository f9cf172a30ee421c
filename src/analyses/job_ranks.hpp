// The ranks of a job side by side: every process with steps in every run or
// trace that `report` is given (the runs of a job's nodes, each recorded by
// its own `record`, or one run holding several ranks), with where it ran,
// and which ranks hold the others up.
//
// Two rules find slow ranks. By step time (stragglers.hpp): a rank whose
// mean step stands out above the others'. That finds ranks that do not wait
// for each other; in synchronous data-parallel training every rank's step
// lasts as long as the slowest's, so there the rank the others wait for is
// told by its wait, not its step time (collective_wait.hpp): `waited_for`
// are the ranks that wait least (within kWaitTolerance of the least) while
// the others (their median) wait a clear share of their steps (kClearWait),
// that share more than they do, and at least twice as much.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/steps/steps.hpp"
#include "run/run.hpp"

namespace stepscope {

// The others wait at least this share of their steps (median over them), and
// this share more than a rank they wait for.
inline constexpr double kClearWait = 0.10;
// A rank waited for waits at most this much more than the rank that waits least.
inline constexpr double kWaitTolerance = 0.05;

struct JobRank {
  std::string source;                 // the run or trace it came from
  std::string host;                   // the recording machine; empty when unknown (traces)
  std::optional<int64_t> node_rank;   // its run's node of the job
  std::optional<int64_t> local_rank;  // on its node
  bool primary = false;               // the process its run's figures and diagnosis describe
  ProcessSteps steps;
  // Its own findings: its run's for the primary; for another process of a
  // run of several ranks, the rules run again as if it were the primary
  // (only where it has a collective wait: the others can wait for no other).
  std::optional<Diagnosis> own;
};

struct JobRanks {
  std::vector<JobRank> ranks;      // by rank, unranked last, else in input order
  std::optional<size_t> slowest;   // the longest mean step, with several ranks
  std::vector<size_t> slow;        // mean step stands out (stragglers.hpp)
  std::vector<size_t> waited_for;  // the others wait for them
  // With waited_for: the mean share of their steps the other ranks wait.
  std::optional<double> others_wait_fraction;

  bool is_waited_for(size_t i) const;
  bool is_slow(size_t i) const;
  // The ranks that wait for those waited for: a known wait, not waited for.
  std::vector<size_t> waiting_ranks() const;
};

// The ranks of one run (or trace) read from `source`.
std::vector<JobRank> job_ranks_of(const Run& run, const StepsAnalysis& steps, const std::string& source);

// Adds `ranks` to `job` and compares them all again.
void add_job_ranks(JobRanks& job, std::vector<JobRank> ranks);

// "rank 1 (node 1, host a)", or "pid 123 (host a)" for a process without a rank.
std::string job_rank_label(const JobRank& rank);

}  // namespace stepscope
