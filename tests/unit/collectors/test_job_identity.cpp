// Which node of which job a recording is: torchrun's arguments and the
// scheduler's variables, and the -o placeholders they fill.
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/job_identity.hpp"
#include "collectors/process/environment.hpp"
#include "util/error.hpp"

namespace {

using stepscope::JobIdentity;

stepscope::Environment environment(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

TEST(JobIdentity, TorchrunsNodeRankComesFirst) {
  std::vector<std::string> command = {"/venv/bin/torchrun", "--nnodes", "2", "--node-rank", "1", "train.py",
                                      "--node-rank", "7"};
  JobIdentity id = stepscope::job_identity(command, environment({{"NODE_RANK", "5"}}), "a");
  EXPECT_EQ(id.node_rank, "1");
  EXPECT_EQ(id.node_rank_from, "torchrun --node-rank");
  // Spelled with an underscore, with '=', and through python -m.
  id = stepscope::job_identity({"python", "-m", "torch.distributed.run", "--node_rank=3", "t.py"}, environment({}), "");
  EXPECT_EQ(id.node_rank, "3");
  // The script's own --node-rank is not torchrun's.
  id = stepscope::job_identity({"torchrun", "train.py", "--node-rank", "7"}, environment({}), "");
  EXPECT_EQ(id.node_rank, "");
  // Not torchrun at all.
  id = stepscope::job_identity({"python", "train.py", "--node-rank", "7"}, environment({}), "");
  EXPECT_EQ(id.node_rank, "");
}

TEST(JobIdentity, SchedulerVariablesInOrder) {
  JobIdentity id = stepscope::job_identity({"python", "t.py"}, environment({{"SLURM_NODEID", "4"}, {"GROUP_RANK", "2"}}), "");
  EXPECT_EQ(id.node_rank, "2");
  EXPECT_EQ(id.node_rank_from, "GROUP_RANK");
  id = stepscope::job_identity({}, environment({{"SLURM_NODEID", "4"}, {"SLURM_JOB_ID", "991"}}), "");
  EXPECT_EQ(id.node_rank, "4");
  EXPECT_EQ(id.job, "991");
  EXPECT_EQ(id.job_from, "SLURM_JOB_ID");
  // torchrun's rendezvous id names the job where no scheduler does.
  id = stepscope::job_identity({"torchrun", "--rdzv-id", "exp42", "t.py"}, environment({{"TORCHELASTIC_RUN_ID", "x"}}), "");
  EXPECT_EQ(id.job, "exp42");
  // A node rank that is not a number is no node rank.
  id = stepscope::job_identity({}, environment({{"NODE_RANK", "first"}}), "");
  EXPECT_EQ(id.node_rank, "");
}

TEST(JobIdentity, PlaceholdersExpand) {
  JobIdentity id{"gpu-07", "1", "NODE_RANK", "12/3 a", "SLURM_JOB_ID"};
  EXPECT_EQ(stepscope::expand_output_path("runs/{job}-node{node_rank}-{host}.db", id), "runs/12_3_a-node1-gpu-07.db");
  EXPECT_EQ(stepscope::expand_output_path("plain.db", id), "plain.db");
  EXPECT_EQ(stepscope::expand_output_path("odd{.db", id), "odd{.db");
}

TEST(JobIdentity, PlaceholderWithoutAValueIsAClearError) {
  JobIdentity id{"a", "", "", "", ""};
  try {
    stepscope::expand_output_path("run-{node_rank}.db", id);
    FAIL() << "no error";
  } catch (const stepscope::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NODE_RANK"), std::string::npos) << e.what();
  }
  EXPECT_THROW(stepscope::expand_output_path("run-{job}.db", id), stepscope::InputError);
  try {
    stepscope::expand_output_path("run-{rank}.db", id);
    FAIL() << "no error";
  } catch (const stepscope::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown placeholder {rank}"), std::string::npos) << e.what();
  }
}

TEST(JobIdentity, RunMetadata) {
  stepscope::Run run;
  stepscope::describe_job(run, {"a", "1", "NODE_RANK", "", ""});
  EXPECT_EQ(run.metadata.at("host"), "a");
  EXPECT_EQ(run.metadata.at("node_rank"), "1");
  EXPECT_EQ(run.metadata.at("node_rank_from"), "NODE_RANK");
  EXPECT_EQ(run.metadata.count("job"), 0u);
}

TEST(ProcessEnvironment, PicksTheNamedVariables) {
  std::string text("PATH=/bin\0RANK=3\0LOCAL_RANK=1\0NOEQUALS\0RANKX=9\0WORLD_SIZE=", 58);
  auto values = stepscope::environment_values(text, {"RANK", "LOCAL_RANK", "WORLD_SIZE"});
  EXPECT_EQ(values, (std::map<std::string, std::string>{{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", ""}}));
  EXPECT_TRUE(stepscope::environment_values("", {"RANK"}).empty());
}

TEST(ProcessEnvironment, ReadsThisProcess) {
  auto values = stepscope::process_environment_values(getpid(), {"PATH"});
  EXPECT_EQ(values.count("PATH"), 1u);
  EXPECT_TRUE(stepscope::process_environment_values(0x7ffffff0, {"PATH"}).empty());
}

}  // namespace
