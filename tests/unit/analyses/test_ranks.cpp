// Which rank a run is: a trace's distributedInfo, or the one rank its recorded
// processes reported through the hooks.
#include <gtest/gtest.h>

#include "analyses/device/gpu.hpp"
#include "analyses/ranks.hpp"

namespace {

stepscope::Run recorded(std::initializer_list<std::pair<int64_t, const char*>> ranks) {
  stepscope::Run run;
  for (const auto& [pid, rank] : ranks) {
    run.add_process(pid, "python train.py");
    if (rank) run.metadata["hooks." + std::to_string(pid) + ".rank"] = rank;
  }
  return run;
}

TEST(Ranks, ATraceSaysItsRank) {
  stepscope::Run run = recorded({{7, "5"}});
  run.metadata["distributedInfo"] = R"({"backend": "nccl", "rank": 2, "world_size": 4})";
  EXPECT_EQ(stepscope::run_rank(run), 2);
  EXPECT_EQ(stepscope::trace_rank(run), 2);
}

TEST(Ranks, ARecordingOfOneRankIsThatRank) {
  // The rank's DataLoader workers inherit RANK and report the same.
  EXPECT_EQ(stepscope::run_rank(recorded({{10, "3"}, {11, "3"}, {12, nullptr}})), 3);
  EXPECT_EQ(stepscope::process_rank(recorded({{10, "3"}}), 10), 3);
  // ... and the device analyses, which said "rank ?" for it, say so.
  EXPECT_EQ(stepscope::analyze_gpu_rank(recorded({{10, "3"}}), "run.db").rank, 3);
}

TEST(Ranks, SeveralRanksOrNoneGiveNoRank) {
  EXPECT_EQ(stepscope::run_rank(recorded({{10, "0"}, {20, "1"}})), std::nullopt);
  EXPECT_EQ(stepscope::run_rank(recorded({{10, nullptr}})), std::nullopt);
  EXPECT_EQ(stepscope::run_rank(recorded({{10, "x1"}, {11, ""}, {12, "1234567890"}})), std::nullopt);
}

}  // namespace
