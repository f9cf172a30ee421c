#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "analyses/report.hpp"
#include "analyses/side_by_side.hpp"
#include "importers/chrome_trace.hpp"
#include "kineto_testdata.hpp"
#include "renderers/report/json.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

TEST(SideBySide, RunsEveryTaskAndLaterTasksSeeWhatTheyWaitFor) {
  for (size_t threads : {1u, 2u, 4u, 16u}) {
    SideBySide work;
    std::vector<int64_t> squares(100, 0);
    int64_t sum = -1;
    std::vector<SideBySide::Task> tasks;
    for (int64_t i = 0; i < 100; ++i) tasks.push_back(work.add([&, i] { squares[i] = i * i; }));
    work.add([&] {
      int64_t total = 0;
      for (SideBySide::Task task : tasks) {
        work.wait_for(task);
        total += squares[task];
      }
      sum = total;
    });
    work.run(threads);
    EXPECT_EQ(sum, 328350) << threads << " threads";  // 0² + ... + 99² = 99·100·199/6
  }
}

TEST(SideBySide, NoTasksIsNothingToDo) {
  SideBySide work;
  EXPECT_NO_THROW(work.run(4));
}

TEST(SideBySide, RethrowsTheFirstFailedTaskInOrderAddedAfterAllHaveRun) {
  for (size_t threads : {1u, 3u}) {
    SideBySide work;
    std::atomic<int> ran{0};
    work.add([&] { ran++; });
    auto first = work.add([&] {
      ran++;
      throw InputError("first");
    });
    work.add([&] {
      ran++;
      throw std::runtime_error("second");
    });
    bool dependent_saw_error = false;
    work.add([&] {
      ran++;
      try {
        work.wait_for(first);
      } catch (const InputError&) {
        dependent_saw_error = true;
        throw;
      }
    });
    try {
      work.run(threads);
      FAIL() << "no exception";
    } catch (const InputError& error) {
      EXPECT_STREQ(error.what(), "first");
    }
    EXPECT_EQ(ran.load(), 4);
    EXPECT_TRUE(dependent_saw_error);
  }
}

std::string report_json(const Report& report) {
  std::ostringstream out;
  write_report_json(report, out);
  return out.str();
}

// The same report, byte for byte, whatever the number of threads: on real
// traces with device activity, synchronizations and several ranks.
TEST(SideBySide, ReportIsTheSameOnOneThreadAndOnMany) {
  std::vector<std::string> ranks;
  for (const char* folder : {"ns_resolution_trace", "amd_trace", "nccl_parser_config", "cpu_only"}) {
    std::filesystem::path path = test::kineto_trace(folder);
    SKIP_WITHOUT_KINETO_TRACES(path.empty());
    ranks.push_back(path.string());
  }
  stepscope::Run first = import_chrome_trace(ranks.front());
  std::vector<std::string> others(ranks.begin() + 1, ranks.end());
  auto open = [](const std::string& path) { return import_chrome_trace(path); };
  std::string expected;
  for (size_t threads : {1u, 2u, 3u, 8u}) {
    stepscope::Report report = build_report(first, ranks.front(), {}, {}, threads);
    add_ranks(report, others, open, threads);
    std::string json = report_json(report);
    ASSERT_EQ(report.gpu.ranks.size(), 4u);
    if (expected.empty()) {
      expected = json;
      // One rank after another, as `add_rank` alone does it.
      stepscope::Report one_by_one = build_report(first, ranks.front(), {}, {}, 1);
      for (const std::string& path : others) add_rank(one_by_one, import_chrome_trace(path), path);
      EXPECT_EQ(report_json(one_by_one), expected);
    }
    EXPECT_EQ(json, expected) << threads << " threads";
    // The other ranks analyzed while the first is (`report`'s way): the same report.
    BackgroundRanks background(others, open, kMostRanksAtOnce, threads);
    stepscope::Report overlapped = build_report(first, ranks.front(), {}, {}, threads);
    add_ranks(overlapped, background.take(), open, threads);
    EXPECT_EQ(report_json(overlapped), expected) << threads << " threads, in the background";
  }
}

// The caller's own work failed while the other ranks were read: those not
// yet opened are not, and nothing is returned.
TEST(SideBySide, OtherRanksStopOnceTheCallerSaysSo) {
  std::atomic<bool> stop = false;
  std::vector<std::string> opened;
  auto open = [&](const std::string& path) {
    opened.push_back(path);
    stop = true;
    return stepscope::Run{};
  };
  EXPECT_TRUE(analyze_ranks({"r1.db", "r2.db", "r3.db"}, open, 4, 1, &stop).empty());
  EXPECT_EQ(opened, std::vector<std::string>{"r1.db"});
}

// The bound from memory: however many threads, no more Runs at once.
TEST(SideBySide, OtherRanksAreReadNoMoreAtOnceThanAsked) {
  std::atomic<int> in_flight = 0, most = 0;
  auto open = [&](const std::string&) {
    int now = ++in_flight;
    for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long enough for others to start
    --in_flight;
    return stepscope::Run{};
  };
  EXPECT_EQ(analyze_ranks({"r1.db", "r2.db", "r3.db", "r4.db"}, open, 4, 1).size(), 4u);
  EXPECT_EQ(most.load(), 1);
}

TEST(SideBySide, AsManyOtherRanksAtOnceAsFitBesideTheFirst) {
  constexpr uint64_t kMiB = 1 << 20;
  EXPECT_EQ(ranks_that_fit(1000 * kMiB, 200 * kMiB, {100 * kMiB, 300 * kMiB}, 4), 2u) << "800 MiB for 300 each";
  EXPECT_EQ(ranks_that_fit(100'000 * kMiB, 200 * kMiB, {100 * kMiB, 300 * kMiB}, 4), 4u) << "never more than asked";
  EXPECT_EQ(ranks_that_fit(300 * kMiB, 200 * kMiB, {300 * kMiB}, 4), 1u) << "one, whose reading says if it fits";
  EXPECT_EQ(ranks_that_fit(100 * kMiB, 200 * kMiB, {300 * kMiB}, 4), 1u) << "the first alone does not fit";
  EXPECT_EQ(ranks_that_fit(100 * kMiB, 0, {0, 0}, 3), 3u) << "nothing known of what they take";
  EXPECT_EQ(ranks_that_fit(100 * kMiB, 0, {}, 0), 1u);
}

TEST(SideBySide, OtherRanksLeftUntakenAreWaitedFor) {
  std::atomic<int> opened = 0;
  {
    BackgroundRanks background({"r1.db", "r2.db"}, [&](const std::string&) {
      opened++;
      return stepscope::Run{};
    });
  }  // as when the first rank's report fails: no error, and no thread left behind
  EXPECT_LE(opened.load(), 2);
  BackgroundRanks none({}, [](const std::string&) -> stepscope::Run { throw InputError("never opened"); });
  EXPECT_TRUE(none.take().empty());
}

TEST(SideBySide, AnErrorOpeningRanksIsTheFirstFailingRanks) {
  stepscope::Run run;
  stepscope::Report report = build_report(run, "r0.json", {}, {}, 2);
  auto open = [](const std::string& path) -> stepscope::Run {
    if (path != "ok") throw InputError(path + ": broken");
    return {};
  };
  try {
    add_ranks(report, {"ok", "r2.json", "r3.json", "ok"}, open, 4);
    FAIL() << "no exception";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "r2.json: broken");
  }
}

}  // namespace
}  // namespace stepscope
