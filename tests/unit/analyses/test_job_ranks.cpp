// The ranks of a job: how much each waits for the others (from its samples),
// which ranks the others wait for, and the rank_straggler finding.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyses/diagnosis/rank_straggler.hpp"
#include "analyses/report.hpp"
#include "analyses/steps/collective_wait.hpp"
#include "analyses/job_ranks.hpp"
#include "analyses/steps/steps.hpp"

namespace {

using stepscope::JobRank;
using stepscope::JobRanks;
using stepscope::Run;
using stepscope::SpanKind;
using stepscope::ThreadState;

constexpr int64_t kMs = 1'000'000;

// A rank of `pid` with ten 10 ms steps on thread `pid`: forward [0, 3) and
// backward [3, 8) of each, and one sample a millisecond in states and stacks
// the test chooses.
struct RankBuilder {
  Run run;
  stepscope::FrameId main, backward, all_reduce;

  RankBuilder() {
    run.metadata["sample_period_ns"] = std::to_string(kMs);  // a sample a millisecond
    main = run.intern_frame("train", "train.py", 1);
    backward = run.intern_frame("_engine_run_backward", "/venv/torch/autograd/graph.py", 2);
    all_reduce = run.intern_frame("all_reduce", "/venv/lib/torch/distributed/distributed_c10d.py", 3);
  }

  void steps(int64_t pid, int64_t steps = 10) {
    run.add_process(pid, "python train.py");
    for (int64_t i = 0; i < steps; ++i) {
      int64_t start = i * 10 * kMs;
      run.spans.push_back({start, start + 3 * kMs, pid, pid, SpanKind::kForward, run.strings.intern("forward")});
      run.spans.push_back({start + 3 * kMs, start + 8 * kMs, pid, pid, SpanKind::kBackward, run.strings.intern("bwd")});
      run.spans.push_back({start, start + 10 * kMs, pid, pid, SpanKind::kStep, run.strings.intern("step")});
    }
  }

  // One sample a millisecond over every step; `waiting(ms into the step)`
  // says which are idle in backward.
  template <typename Waiting>
  void samples(int32_t pid, int64_t steps, Waiting waiting, stepscope::FrameId leaf) {
    stepscope::StackId base = run.stacks.push(stepscope::StackTree::kRoot, main);
    stepscope::StackId deep = run.stacks.push(base, leaf);
    for (int64_t ms = 0; ms < steps * 10; ++ms) {
      bool idle = waiting(ms % 10);
      run.samples.push_back({ms * kMs, pid, pid, idle ? deep : base, idle ? ThreadState::kIdle : ThreadState::kRunning});
    }
  }
};

// Rank 0 waits 4 ms of each 10 ms step, idle in backward: 40 %; the first
// step is warm-up and left out (its samples too).
TEST(CollectiveWait, IdleInBackwardOnTheCpuIsWaiting) {
  RankBuilder b;
  b.steps(7);
  b.samples(7, 10, [](int64_t ms) { return ms >= 4 && ms < 8; }, b.backward);
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(b.run);
  ASSERT_EQ(steps.processes.size(), 1u);
  ASSERT_TRUE(steps.processes[0].collective_wait_fraction);
  EXPECT_DOUBLE_EQ(*steps.processes[0].collective_wait_fraction, 0.4);
}

// Idle outside backward is not waiting for other ranks (a sleep, a lock),
// unless the stack is in one of torch.distributed's collectives.
TEST(CollectiveWait, IdleElsewhereCountsOnlyInsideACollective) {
  RankBuilder b;
  b.steps(7);
  b.samples(7, 10, [](int64_t ms) { return ms < 2; }, b.main);  // idle in forward
  EXPECT_DOUBLE_EQ(*stepscope::analyze_steps(b.run).processes[0].collective_wait_fraction, 0.0);

  RankBuilder c;
  c.steps(7);
  c.samples(7, 10, [](int64_t ms) { return ms < 2 || ms == 9; }, c.all_reduce);  // a barrier in forward and after
  EXPECT_DOUBLE_EQ(*stepscope::analyze_steps(c.run).processes[0].collective_wait_fraction, 0.3);
}

// On an accelerator the step thread also sleeps while the device runs the
// backward: only the collectives' frames count there.
TEST(CollectiveWait, OnAnAcceleratorOnlyCollectivesCount) {
  RankBuilder b;
  b.steps(7);
  auto track = static_cast<uint32_t>(b.run.counter_tracks.size());
  b.run.counter_tracks.push_back({b.run.strings.intern("step_peak_device_memory"), 7, b.run.strings.intern("bytes")});
  for (int64_t i = 0; i < 10; ++i) b.run.counter_values.push_back({track, (i * 10 + 10) * kMs, 1e9});
  b.samples(7, 10, [](int64_t ms) { return ms >= 4 && ms < 8; }, b.backward);
  EXPECT_DOUBLE_EQ(*stepscope::analyze_steps(b.run).processes[0].collective_wait_fraction, 0.0);
}

TEST(CollectiveWait, NoneWithoutSamples) {
  RankBuilder b;
  b.steps(7);
  EXPECT_FALSE(stepscope::analyze_steps(b.run).processes[0].collective_wait_fraction);
}

JobRank rank_waiting(int64_t rank, double wait, double step_ms = 20) {
  JobRank r;
  r.source = "node" + std::to_string(rank) + ".db";
  r.host = "host" + std::to_string(rank);
  r.steps.pid = 100 + rank;
  r.steps.rank = rank;
  r.steps.collective_wait_fraction = wait;
  r.steps.step_time.mean_ms = step_ms;
  return r;
}

std::vector<int64_t> waited_for(const std::vector<double>& waits) {
  JobRanks job;
  std::vector<JobRank> ranks;
  for (size_t i = 0; i < waits.size(); ++i) ranks.push_back(rank_waiting(static_cast<int64_t>(i), waits[i]));
  stepscope::add_job_ranks(job, std::move(ranks));
  std::vector<int64_t> out;
  for (size_t i : job.waited_for) out.push_back(*job.ranks[i].steps.rank);
  return out;
}

TEST(JobRanks, TheRankThatWaitsLeastWhileTheOthersWaitIsWaitedFor) {
  EXPECT_EQ(waited_for({0.45, 0.05}), std::vector<int64_t>{1});
  EXPECT_EQ(waited_for({0.40, 0.41, 0.02, 0.39}), std::vector<int64_t>{2});
  EXPECT_EQ(waited_for({0.40, 0.02, 0.03, 0.42}), (std::vector<int64_t>{1, 2}));  // two slow ranks
  // A balanced job: each waits a little for the other now and then.
  EXPECT_TRUE(waited_for({0.08, 0.12}).empty());
  EXPECT_TRUE(waited_for({0.0, 0.0, 0.0}).empty());
  // The others wait a clear share but not twice as much as the least: no one rank holds them up.
  EXPECT_TRUE(waited_for({0.30, 0.20}).empty());
  EXPECT_TRUE(waited_for({0.16, 0.07}).empty());  // twice as much, but 9 points: jitter
  EXPECT_TRUE(waited_for({0.5}).empty());
}

TEST(JobRanks, OrderedByRankAcrossRuns) {
  JobRanks job;
  stepscope::add_job_ranks(job, {rank_waiting(1, 0.05)});
  stepscope::add_job_ranks(job, {rank_waiting(0, 0.45)});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].steps.rank, 0);
  EXPECT_EQ(job.ranks[0].source, "node0.db");
  ASSERT_EQ(job.waited_for.size(), 1u);
  EXPECT_EQ(job.ranks[job.waited_for[0]].steps.rank, 1);
  ASSERT_TRUE(job.others_wait_fraction);
  EXPECT_DOUBLE_EQ(*job.others_wait_fraction, 0.45);
  EXPECT_EQ(stepscope::job_rank_label(job.ranks[1]), "rank 1 (host host1)");
}

// The finding names the rank, the others' wait, and the straggler's own
// findings, which come first, titled with its name and with its figures.
TEST(JobRanks, StragglerFindingPutsItsOwnFindingsFirst) {
  JobRanks job;
  stepscope::Finding input = stepscope::time_finding("input_bound", 0.8, "Input-bound: 80% of each step");
  stepscope::Finding input_rank0 = stepscope::time_finding("input_bound", 0.9, "Input-bound: 90% of each step");
  stepscope::Finding logging = stepscope::time_finding("logging_overhead", 0.1, "Logging");
  JobRank slow = rank_waiting(1, 0.05);
  slow.node_rank = 1;
  slow.own = stepscope::Diagnosis{{input}, ""};
  stepscope::add_job_ranks(job, {rank_waiting(0, 0.45), slow});
  std::vector<stepscope::RankDiagnosis> ranks = {{"rank 0", {{input_rank0, logging}, ""}}, {"rank 1", {{input}, ""}}};
  stepscope::Diagnosis merged = stepscope::merge_rank_diagnoses(ranks);
  stepscope::diagnose_stragglers(merged, job);
  ASSERT_EQ(merged.findings.size(), 3u);
  EXPECT_EQ(merged.findings[0].id, "input_bound");
  EXPECT_EQ(merged.findings[0].title, "Rank 1, the others wait for it. Input-bound: 80% of each step");
  EXPECT_DOUBLE_EQ(merged.findings[0].share, 0.8);  // rank 1's figures, not rank 0's higher ones
  EXPECT_EQ(merged.findings[0].ranks, (std::vector<std::string>{"rank 0", "rank 1"}));
  const stepscope::Finding& straggler = merged.findings[1];
  EXPECT_EQ(straggler.id, "rank_straggler");
  EXPECT_DOUBLE_EQ(straggler.share, 0.45);
  EXPECT_EQ(straggler.title, "The other ranks wait 45% of their steps for rank 1 (node 1, host host1)");
  ASSERT_EQ(straggler.evidence.size(), 4u);
  EXPECT_EQ(straggler.evidence[1], "1 other rank: rank 0 (host host0) 45%");
  EXPECT_EQ(straggler.evidence[3], "what rank 1 (node 1, host host1) does instead, its own findings: input_bound "
                                   "(Input-bound: 80% of each step)");
  EXPECT_EQ(merged.findings[2].id, "logging_overhead");
}

TEST(JobRanks, NoFindingWithoutARankWaitedFor) {
  JobRanks job;
  stepscope::add_job_ranks(job, {rank_waiting(0, 0.08), rank_waiting(1, 0.12)});
  stepscope::Diagnosis diagnosis;
  diagnosis.findings.push_back(stepscope::time_finding("input_bound", 0.5, "x"));
  stepscope::diagnose_stragglers(diagnosis, job);
  ASSERT_EQ(diagnosis.findings.size(), 1u);
  EXPECT_EQ(diagnosis.findings[0].title, "x");
}

// A run of two ranks whose second (not its run's primary) the others wait
// for: rank 0 waits 40% of its steps in backward, rank 1 not at all.
Run run_waiting_for_its_second_rank(int32_t first_pid) {
  RankBuilder b;
  for (int32_t pid : {first_pid, first_pid + 1}) {
    b.steps(pid);
    b.run.metadata["hooks." + std::to_string(pid) + ".rank"] = std::to_string(pid - first_pid);
  }
  b.samples(first_pid, 10, [](int64_t ms) { return ms >= 4 && ms < 8; }, b.backward);
  b.samples(first_pid + 1, 10, [](int64_t) { return false; }, b.backward);
  return std::move(b.run);
}

const JobRank& first_waited_for(const stepscope::Report& report) {
  EXPECT_FALSE(report.job.waited_for.empty());
  return report.job.ranks.at(report.job.waited_for.at(0));
}

// Only the rank the others wait for is diagnosed on its own, once the job's
// ranks are known: in the report's own run, or in another, read again.
TEST(JobRanks, TheRankWaitedForGetsItsOwnFindingsWhereverItRuns) {
  stepscope::Run run = run_waiting_for_its_second_rank(10);
  stepscope::Report alone = stepscope::build_report(run, "a.db", {});
  EXPECT_EQ(first_waited_for(alone).steps.pid, 11);
  EXPECT_FALSE(first_waited_for(alone).primary);
  EXPECT_TRUE(first_waited_for(alone).own);

  RankBuilder other;  // a third rank that waits too: the one waited for is in the second run
  other.steps(30);
  other.run.metadata["hooks.30.rank"] = "2";
  other.samples(30, 10, [](int64_t ms) { return ms >= 4 && ms < 8; }, other.backward);
  stepscope::Report job = stepscope::build_report(other.run, "b.db", {});
  std::vector<std::string> opened;
  stepscope::add_ranks(job, {"a.db"}, [&](const std::string& path) {
    opened.push_back(path);
    return run_waiting_for_its_second_rank(10);
  });
  EXPECT_EQ(opened, (std::vector<std::string>{"a.db", "a.db"}));  // read again for rank 1's own findings
  const JobRank& waited = first_waited_for(job);
  EXPECT_EQ(waited.steps.rank, 1);
  EXPECT_TRUE(waited.own);
  ASSERT_FALSE(job.diagnosis.findings.empty());
  EXPECT_TRUE(std::any_of(job.diagnosis.findings.begin(), job.diagnosis.findings.end(),
                          [](const stepscope::Finding& f) { return f.id == "rank_straggler"; }));
}

}  // namespace
