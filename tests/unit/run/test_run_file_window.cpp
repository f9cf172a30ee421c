// Reading a window of a run file gives exactly what keep_window keeps of the
// whole run, and the file's extent is run_extent's.
#include <unistd.h>

#include <filesystem>
#include <tuple>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "run/run_file.hpp"
#include "run_rows.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kMs = 1'000'000;

// Twenty seconds of two threads sampled every millisecond (many sample
// blocks), steps of 100 ms with a kernel and its launch each, a counter every
// 10 ms, and rows that break time order: a span spanning the whole run
// appended last, a counter stamped before the others.
Run twenty_seconds() {
  Run run;
  run.metadata["start_clock_ns"] = std::to_string(-3 * kMs);
  run.add_process(10, "python train.py");
  run.add_thread(10, 10, "MainThread");
  run.add_thread(10, 11, "worker");
  StackId a = run.stacks.intern({run.intern_frame("train", "t.py", 1)});
  StackId b = run.stacks.intern({run.intern_frame("train", "t.py", 1), run.intern_frame("load", "d.py", 9)});
  for (int64_t ms = 0; ms < 20'000; ++ms) {
    run.samples.push_back({ms * kMs, 10, 10, ms % 300 < 200 ? a : b, ThreadState::kRunning, true});
    run.samples.push_back({ms * kMs, 10, 11, b, ThreadState::kIdle, false});
  }
  run.counter_tracks.push_back({run.strings.intern("rss"), 10, run.strings.intern("bytes")});
  for (int64_t ms = 0; ms < 20'000; ms += 10) run.counter_values.push_back({0, ms * kMs, double(ms)});
  run.counter_values.push_back({0, -1 * kMs, -1});
  for (int64_t step = 0; step < 200; ++step) {
    int64_t start = step * 100 * kMs;
    auto launch = static_cast<SpanId>(run.spans.size());
    run.spans.push_back({start + 5 * kMs, start + 6 * kMs, 10, 10, SpanKind::kRuntimeCall,
                         run.strings.intern("cudaLaunchKernel"), step + 1});
    run.spans.push_back({start + 7 * kMs, start + 9 * kMs, 7, 1, SpanKind::kKernel, run.strings.intern("gemm"),
                         step + 1, 0, run.strings.intern("[[2, 3]]")});
    run.spans.push_back({start, start + 100 * kMs, 10, 10, SpanKind::kStep, run.strings.intern("step")});
    run.flows.push_back({launch, launch + 1, run.strings.intern("ac2g")});
  }
  run.spans.push_back({-2 * kMs, 20'001 * kMs, 10, 10, SpanKind::kUserRange, run.strings.intern("all")});
  run.flows.push_back({0, static_cast<SpanId>(run.spans.size() - 1), run.strings.intern("crossing")});
  return run;
}


class RunFileWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = (fs::temp_directory_path() / ("stepscope-window-" + std::to_string(getpid()) + ".db")).string();
    save_run(twenty_seconds(), file_);
  }
  void TearDown() override { fs::remove(file_); }

  void expect_window_as_kept(TimeRange window) {
    SCOPED_TRACE(std::to_string(window.from_ns) + ":" + std::to_string(window.to_ns));
    stepscope::Run expected = load_run(file_);
    keep_window(expected, window);
    stepscope::Run actual = RunFileReader(file_).load(window);
    test::expect_same_data(expected, actual);
    EXPECT_EQ(expected.metadata, actual.metadata);
    EXPECT_EQ(expected.processes, actual.processes);
    EXPECT_EQ(expected.threads, actual.threads);
    EXPECT_EQ(expected.stacks.size(), actual.stacks.size());
    EXPECT_EQ(expected.strings.size(), actual.strings.size());
  }

  std::string file_;
};

TEST_F(RunFileWindowTest, AWindowReadsAsTheWholeRunCut) {
  for (TimeRange window : {TimeRange{-3 * kMs, 20'001 * kMs + 1}, TimeRange{0, 1}, TimeRange{5'000 * kMs, 5'600 * kMs},
                           TimeRange{4'095 * kMs / 2, 4'097 * kMs / 2}, TimeRange{19'990 * kMs, 30'000 * kMs},
                           TimeRange{-10 * kMs, 0}, TimeRange{10'000 * kMs + 1, 10'000 * kMs + 2},
                           TimeRange{30'000 * kMs, 40'000 * kMs}}) {
    expect_window_as_kept(window);
  }
}

TEST_F(RunFileWindowTest, TheExtentComesFromTheIndexesAsFromTheRun) {
  auto expected = run_extent(load_run(file_));
  auto actual = RunFileReader(file_).extent();
  ASSERT_TRUE(expected && actual);
  EXPECT_EQ(actual->from_ns, expected->from_ns);
  EXPECT_EQ(actual->to_ns, expected->to_ns);
  EXPECT_EQ(actual->from_ns, -3 * kMs) << "the recording's start";
  EXPECT_EQ(actual->to_ns, 20'001 * kMs);
}

// What a read will hold, before it: every row of a whole read; of a window,
// at least the rows it keeps and at most those of the blocks it decodes.
TEST_F(RunFileWindowTest, RowCountsBoundWhatAReadHolds) {
  stepscope::Run whole = load_run(file_);
  RunFileReader::RowCounts all = RunFileReader(file_).row_counts();
  EXPECT_EQ(all.samples, whole.samples.size());
  EXPECT_EQ(all.spans, whole.spans.size());
  EXPECT_EQ(all.flows, whole.flows.size());
  EXPECT_EQ(all.counter_values, whole.counter_values.size());
  EXPECT_EQ(all.bytes_in_memory(), whole.samples.size() * sizeof(Sample) + whole.spans.size() * sizeof(Span) +
                                       whole.flows.size() * sizeof(Flow) +
                                       whole.counter_values.size() * sizeof(CounterValue));
  for (TimeRange window : {TimeRange{5'000 * kMs, 5'600 * kMs}, TimeRange{19'990 * kMs, 30'000 * kMs}}) {
    RunFileReader::RowCounts counts = RunFileReader(file_).row_counts(window);
    stepscope::Run part = RunFileReader(file_).load(window);
    EXPECT_GE(counts.samples, part.samples.size());
    EXPECT_LE(counts.samples, part.samples.size() + 2 * 4096) << "a block at each edge at most";
    EXPECT_GE(counts.spans, part.spans.size());
    EXPECT_GE(counts.counter_values, part.counter_values.size());
    EXPECT_LT(counts.samples, all.samples);
  }
  RunFileReader::RowCounts none = RunFileReader(file_).row_counts(TimeRange{30'000 * kMs, 40'000 * kMs});
  EXPECT_EQ(none.samples + none.spans + none.counter_values, 0u);
}

TEST_F(RunFileWindowTest, AnEmptyRunHasNoExtent) {
  save_run(stepscope::Run{}, file_);
  EXPECT_FALSE(RunFileReader(file_).extent());
  EXPECT_TRUE(RunFileReader(file_).load(TimeRange{0, 10}).samples.empty());
}

// An index that lies (a block's samples outside its stated time, rows of a
// range outside its keys, rows no range covers) would hide rows from a
// window: the reader refuses the file rather than answer with fewer.
TEST_F(RunFileWindowTest, AnIndexLyingAboutItsRowsIsRefused) {
  struct Case {
    const char* sql;
    const char* expected;
  };
  for (const Case& c : {
           Case{"UPDATE sample_blocks SET start_ns = start_ns + 1 WHERE id = 2",
                "table sample_blocks row 2: a sample at"},
           Case{"UPDATE span_blocks SET end_ns = end_ns - 1 WHERE id = 0", "table span_blocks row 0: a span at"},
           Case{"DELETE FROM row_ranges WHERE rows = 'flows'", "covers 0 rows of flows, which has 201"},
       }) {
    SCOPED_TRACE(c.sql);
    save_run(twenty_seconds(), file_);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, c.sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    try {
      RunFileReader(file_).load(TimeRange{0, 20'000 * kMs});
      FAIL() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stepscope
