// Which node of which job a recording is. One `record` command line serves
// every node of a job (`record -o 'runs/{job}-node{node_rank}.db' -- torchrun
// ...`): the placeholders take their values from the launcher's arguments and
// the scheduler's environment, and the run keeps them in its metadata so that
// the runs of one job line up in one report (docs/jobs.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct JobIdentity {
  std::string host;
  std::string node_rank;       // a decimal number; empty when nothing says
  std::string node_rank_from;  // where it came from: "NODE_RANK", "torchrun --node-rank" ...
  std::string job;             // the scheduler's or launcher's id of the job; empty when none
  std::string job_from;
};

// This machine's host name (gethostname); empty when it cannot tell.
std::string this_host();

// Looks a variable up in an environment; empty when it is unset or empty.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment this_process_environment();

// The identity of a recording of `command` (empty when attaching) on `host`.
// The node rank: torchrun's --node-rank, else PET_NODE_RANK, NODE_RANK,
// GROUP_RANK, SLURM_NODEID; the job: SLURM_JOB_ID, else torchrun's
// --rdzv-id, PET_RDZV_ID, TORCHELASTIC_RUN_ID.
JobIdentity job_identity(const std::vector<std::string>& command, const Environment& env, std::string host);

// `pattern` with {host}, {node_rank} and {job} replaced; an unknown
// placeholder, or one without a value here, is an InputError that says
// where the value would have come from.
std::string expand_output_path(std::string_view pattern, const JobIdentity& identity);

// Metadata host, node_rank, node_rank_from, job, job_from (the known ones).
void describe_job(Run& run, const JobIdentity& identity);

}  // namespace stepscope
