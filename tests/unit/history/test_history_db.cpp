// The run history: append and read back, latest earlier run of a command,
// and refusing files that are not a history.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "history/history_db.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("stepscope-history-" + std::to_string(::getpid()) + "-" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { std::filesystem::remove_all(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

HistoryEntry entry(const std::string& command, int64_t when) {
  HistoryEntry e;
  e.command = command;
  e.recorded_unix_ns = when;
  e.git_commit = "abc123";
  e.host = "host \"x\"";
  e.config = "{\"rate_hz\": 100}";
  e.steps = 2;
  e.has_phases = true;
  e.steps_origin = "hooks";
  e.samples_per_sec = 1600.5;
  e.peak_host_bytes = 1 << 20;
  return e;
}

TEST(HistoryDb, AppendsAndReadsBack) {
  TempDir dir;
  std::string path = (dir.path / "sub" / "history.db").string();  // the folder is made
  std::vector<StepRecord> steps(2);
  steps[0] = {.start_ns = 0, .end_ns = 20, .tid = 0, .phase_ns = {1, 2, 3, 4, 10}, .samples = 32, .tokens = -1,
              .host_peak_bytes = 7, .device_peak_bytes = -1, .warmup = true};
  steps[1] = {.start_ns = 20, .end_ns = 45, .tid = 0, .phase_ns = {0, 0, 0, 0, 25}, .samples = 32, .tokens = -1,
              .host_peak_bytes = 9, .device_peak_bytes = -1, .warmup = false};
  {
    HistoryDb db(path, HistoryDb::Mode::kCreate);
    EXPECT_EQ(db.append(entry("python a.py", 100), steps), 1);
    EXPECT_EQ(db.append(entry("python b.py", 200), {}), 2);
    EXPECT_EQ(db.append(entry("python a.py", 300), {}), 3);
    HistoryEntry crashed = entry("python a.py", 400);
    crashed.exit_status = 1;
    EXPECT_EQ(db.append(crashed, {}), 4);
    HistoryEntry empty = entry("python a.py", 500);
    empty.steps = 0;
    EXPECT_EQ(db.append(empty, {}), 5);
  }
  HistoryDb db(path, HistoryDb::Mode::kReadExisting);
  std::vector<HistoryEntry> all = db.entries();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].host, "host \"x\"");
  EXPECT_EQ(all[0].samples_per_sec, 1600.5);
  EXPECT_FALSE(all[0].tokens_per_sec.has_value());
  EXPECT_EQ(all[0].peak_host_bytes, 1 << 20);
  EXPECT_TRUE(all[0].has_phases);
  std::vector<StepRecord> back = db.steps(1);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].phase_ns, steps[0].phase_ns);
  EXPECT_TRUE(back[0].warmup);
  EXPECT_EQ(back[1].time_ns(), 25);
  EXPECT_EQ(back[1].host_peak_bytes, 9);
  EXPECT_EQ(back[1].tokens, -1);

  EXPECT_EQ(db.latest_before("python a.py", 1000)->id, 3);  // not the crashed one, nor the one without steps
  EXPECT_EQ(db.latest_before("python a.py", 300)->id, 1);  // strictly earlier
  EXPECT_FALSE(db.latest_before("python a.py", 100).has_value());
  EXPECT_FALSE(db.latest_before("python c.py", 1000).has_value());
}

TEST(HistoryDb, RefusesWhatIsNotAHistory) {
  TempDir dir;
  std::filesystem::create_directories(dir.path);
  EXPECT_THROW(HistoryDb((dir.path / "missing.db").string(), HistoryDb::Mode::kReadExisting), InputError);
  std::string text = (dir.path / "text.db").string();
  std::ofstream(text) << "not a database at all, just some text that is long enough";
  EXPECT_THROW(HistoryDb(text, HistoryDb::Mode::kCreate), InputError);
}

}  // namespace
}  // namespace stepscope
