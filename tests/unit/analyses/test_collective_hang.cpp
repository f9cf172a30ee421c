#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analyses/collective_hang.hpp"
#include "importers/flight_recorder.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

// A Flight Recorder as torch 2.12's gloo backend writes it: group "0" has
// enqueued `enqueued` all-reduces and finished `completed`.
FlightRecorder recorder(int64_t enqueued, int64_t completed) {
  std::string entries;
  for (int64_t seq = 1; seq <= enqueued; ++seq) {
    if (!entries.empty()) entries += ',';
    entries += fmt::format(R"({{"collective_seq_id": {}, "process_group": ["0", "default_pg"], "pg_id": 0,
        "profiling_name": "gloo:all_reduce", "state": "scheduled", "retired": {}, "input_sizes": [[2372]]}})",
                           seq, seq <= completed ? "true" : "false");
  }
  return parse_flight_recorder(
      fmt::format(R"({{"version": "2.10", "entries": [{}], "pg_config": {{"": {{"name": "", "ranks": "[]"}}}},
          "pg_status": {{"0": {{"last_enqueued_collective": "{}", "last_completed_collective": "{}",
                               "last_started_collective": "-1"}}}}}})",
                  entries, enqueued, completed),
      "test");
}

ProcessSnapshot rank_process(int64_t rank, int64_t world_size, std::vector<SnapshotFrame> frames,
                             ThreadState state = ThreadState::kIdle) {
  ProcessSnapshot process;
  process.pid = static_cast<pid_t>(100 + rank);
  process.python_version = "3.11.2";
  process.rank = rank;
  process.world_size = world_size;
  process.job = "127.0.0.1:29500";
  ThreadSnapshot thread;
  thread.tid = process.pid;
  thread.state = state;
  thread.frames = std::move(frames);
  process.threads.push_back(thread);
  return process;
}

Dump dump_of(std::string source, std::vector<ProcessSnapshot> processes) {
  Dump dump;
  dump.source = std::move(source);
  dump.host = "node";
  dump.processes = std::move(processes);
  return dump;
}

const std::vector<SnapshotFrame> kInBackward = {
    {"_engine_run_backward", "/venv/torch/autograd/graph.py", 829},
    {"backward", "/venv/torch/_tensor.py", 625},
    {"train", "/job/train.py", 40}};
const std::vector<SnapshotFrame> kInLock = {{"wait_for_lock", "/job/train.py", 12}, {"train", "/job/train.py", 33}};
const std::vector<SnapshotFrame> kInAllReduce = {
    {"all_reduce", "/venv/torch/distributed/distributed_c10d.py", 2800},
    {"wrapper", "/venv/torch/distributed/c10d_logger.py", 81},
    {"sync", "/job/train.py", 50}};

TEST(CollectiveHang, FlightRecorderNamesTheCollectiveAndTheMissingRank) {
  ProcessSnapshot waiting = rank_process(0, 3, kInBackward);
  waiting.flight_recorder = recorder(11, 10);
  ProcessSnapshot stuck = rank_process(1, 3, kInLock);
  stuck.flight_recorder = recorder(10, 10);
  ProcessSnapshot also_waiting = rank_process(2, 3, kInBackward);
  also_waiting.flight_recorder = recorder(11, 10);
  HangAnalysis hang = analyse_hang({dump_of("a.json", {waiting, also_waiting}), dump_of("b.json", {stuck})});

  EXPECT_EQ(hang.source, "flight_recorder");
  EXPECT_EQ(hang.world_size, 3);
  ASSERT_EQ(hang.hangs.size(), 1u);
  const HangFinding& found = hang.hangs[0];
  EXPECT_EQ(found.collective.name, "gloo:all_reduce");
  EXPECT_EQ(found.collective.seq, 11);
  EXPECT_EQ(found.collective.process_group, "0");
  EXPECT_EQ(found.collective.group_name, "default_pg");
  EXPECT_EQ(found.entered_ranks, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(found.missing_ranks, (std::vector<int64_t>{1}));
  EXPECT_TRUE(found.unknown_ranks.empty());
  EXPECT_EQ(hang.diagnosis.findings[0].title,
            "Rank 1 never entered gloo:all_reduce #11 of process group 0 (default_pg); ranks 0, 2 wait in it");
  EXPECT_NE(hang.diagnosis.findings[0].evidence[1].find("wait_for_lock (train.py:12) <- train (train.py:33)"),
            std::string::npos);
  EXPECT_EQ(hang.ranks[1].source, "b.json");
}

TEST(CollectiveHang, StacksAloneTellTheRankElsewhere) {
  HangAnalysis hang = analyse_hang(
      {dump_of("a.json", {rank_process(0, 2, kInAllReduce)}), dump_of("b.json", {rank_process(1, 2, kInLock)})});
  EXPECT_EQ(hang.source, "stacks");
  ASSERT_EQ(hang.hangs.size(), 1u);
  EXPECT_EQ(hang.hangs[0].collective.name, "all_reduce");
  EXPECT_EQ(hang.hangs[0].collective.seq, -1);
  EXPECT_EQ(hang.hangs[0].missing_ranks, (std::vector<int64_t>{1}));
}

TEST(CollectiveHang, RunningBackwardIsNotAWait) {
  HangAnalysis hang = analyse_hang({dump_of("a.json", {rank_process(0, 2, kInBackward, ThreadState::kRunning),
                                                       rank_process(1, 2, kInLock)})});
  EXPECT_TRUE(hang.hangs.empty());
  EXPECT_NE(hang.diagnosis.note.find("No rank waits in a collective"), std::string::npos);
}

TEST(CollectiveHang, ARankInNoDumpIsUnknownAndAnExitedOneMissing) {
  Dump first = dump_of("a.json", {rank_process(0, 3, kInAllReduce)});
  ExitedRank gone;
  gone.pid = 7;
  gone.rank = 2;
  gone.world_size = 3;
  gone.status = 1;
  gone.exception = "ValueError: bad shard";
  first.exited.push_back(gone);
  HangAnalysis hang = analyse_hang({first});
  ASSERT_EQ(hang.hangs.size(), 1u);
  EXPECT_EQ(hang.hangs[0].missing_ranks, (std::vector<int64_t>{2}));
  EXPECT_EQ(hang.hangs[0].unknown_ranks, (std::vector<int64_t>{1}));
  EXPECT_EQ(hang.ranks[1].where, RankWhere::kAbsent);
  EXPECT_EQ(hang.ranks[2].where, RankWhere::kExited);
  EXPECT_NE(hang.diagnosis.findings[0].evidence[1].find("exited with status 1 (ValueError: bad shard)"),
            std::string::npos);
  EXPECT_EQ(hang.warnings, (std::vector<std::string>{"rank 1 is in none of the inputs"}));
}

TEST(CollectiveHang, OnlyUnknownRanksDoNotMakeAVerdictOfMissing) {
  HangAnalysis hang = analyse_hang({dump_of("a.json", {rank_process(0, 2, kInAllReduce)})});
  ASSERT_EQ(hang.hangs.size(), 1u);
  EXPECT_TRUE(hang.hangs[0].missing_ranks.empty());
  EXPECT_EQ(hang.diagnosis.findings[0].title,
            "Rank 0 waits in all_reduce; rank 1 is in none of the inputs (dump its node to see whether it entered)");
}

TEST(CollectiveHang, RefusesDumpsOfTwoJobsAndARankTwice) {
  ProcessSnapshot other_job = rank_process(1, 2, kInLock);
  other_job.job = "127.0.0.1:29600";
  Dump a = dump_of("a.json", {rank_process(0, 2, kInAllReduce)});
  try {
    analyse_hang({a, dump_of("b.json", {other_job})});
    FAIL() << "two jobs were mixed";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "dumps of different jobs: a.json is of job 127.0.0.1:29500, b.json of job 127.0.0.1:29600");
  }
  EXPECT_THROW(analyse_hang({a, dump_of("c.json", {rank_process(0, 2, kInLock)})}), InputError);
}

TEST(CollectiveHang, HoldsWholeJobWhenEveryRankIsThereOrExited) {
  Dump dump = dump_of("", {rank_process(0, 2, kInAllReduce)});
  EXPECT_FALSE(holds_whole_job(dump));
  ExitedRank gone;
  gone.rank = 1;
  dump.exited.push_back(gone);
  EXPECT_TRUE(holds_whole_job(dump));
  EXPECT_FALSE(holds_whole_job(dump_of("", {})));
}

TEST(FlightRecorder, ReadsGroupsAndRefusesOtherDocuments) {
  FlightRecorder state = parse_flight_recorder(
      R"({"entries": [], "pg_config": {"0": {"ranks": "[0, 1, 3]"}, "1": {"ranks": [2, 4]}},
          "pg_status": {"0": {"last_enqueued_collective": 4, "last_completed_collective": "3"}}})",
      "x");
  EXPECT_EQ(state.group_ranks["0"], (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(state.group_ranks["1"], (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(state.groups["0"].last_enqueued, 4);
  EXPECT_EQ(state.groups["0"].last_completed, 3);
  EXPECT_THROW(parse_flight_recorder(R"({"traceEvents": []})", "x"), InputError);
  EXPECT_THROW(parse_flight_recorder(R"({"entries": [)", "x"), InputError);
}

}  // namespace
}  // namespace stepscope
