// A run file kept under a size (record --max-size): written in many commits
// as a recorder writes it, trimmed after each, it holds only its newest data,
// reads as the untrimmed run cut at trimmed_before_ns, whole or by window,
// and says in its metadata what was dropped.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "run/run_file.hpp"
#include "run_rows.hpp"
#include "run/trimmed_run.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using test::expect_same_data;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kCommitNs = 100 * kMs;  // a commit's share of the recording
constexpr int kCommits = 200;
constexpr uint64_t kLimit = 128 * 1024;

// The rows a recorder adds between two commits, the same for the same
// commit number: two threads sampled every 0.25 ms on stacks that change
// (blocks that compress little), a step with ten launches, their kernels and
// a flow between each two, values of four counters, and now and then spans
// that arrive late: a
// kernel that ended long ago, and a range that started long ago (unless
// `late_spans` is false).
void add_commit(stepscope::Run& run, int commit, bool late_spans = true) {
  int64_t from = commit * kCommitNs;
  uint64_t noise = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(commit + 1);
  auto next_noise = [&noise] { return (noise = noise * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  FrameId outer = run.intern_frame("train", "train.py", 1);
  for (int64_t ts = from; ts < from + kCommitNs; ts += kMs / 4) {
    FrameId inner = run.intern_frame("layer" + std::to_string(next_noise() % 40), "model.py", 7);
    StackId stack = run.stacks.intern({outer, inner});
    run.samples.push_back({ts, 10, 10, stack, ThreadState::kRunning, true});
    run.samples.push_back({ts, 10, 11, StackTree::kRoot, ThreadState::kIdle, false});
  }
  auto add_span = [&run](int64_t start, int64_t end, SpanKind kind, const char* name) {
    run.spans.push_back({start, end, 10, 10, kind, run.strings.intern(name)});
    return static_cast<SpanId>(run.spans.size() - 1);
  };
  SpanId launch = 0;
  for (int64_t ms = 0; ms < 100; ms += 10) {
    launch = add_span(from + ms * kMs, from + (ms + 1) * kMs, SpanKind::kRuntimeCall, "cudaLaunchKernel");
    SpanId kernel = add_span(from + (ms + 2) * kMs, from + (ms + 9) * kMs, SpanKind::kKernel, "gemm");
    run.flows.push_back({launch, kernel, run.strings.intern("ac2g")});
  }
  add_span(from, from + kCommitNs, SpanKind::kStep, "step");
  if (late_spans && commit % 7 == 6) {
    add_span(from - 30 * kCommitNs, from - 29 * kCommitNs, SpanKind::kKernel, "late kernel");
  }
  if (late_spans && commit % 50 == 49) {
    SpanId range = add_span(from - 45 * kCommitNs, from + kCommitNs, SpanKind::kUserRange, "epoch");
    run.flows.push_back({range, launch, run.strings.intern("crossing")});
  }
  for (int64_t ms = 0; ms < 100; ms += 5) {
    for (CounterTrackId track = 0; track < 4; ++track) {
      run.counter_values.push_back({track, from + ms * kMs, static_cast<double>(next_noise() % 100000)});
    }
  }
}

stepscope::Run new_run() {
  stepscope::Run run;
  run.metadata["start_clock_ns"] = "0";
  run.metadata["sample_period_ns"] = std::to_string(kMs / 4);
  run.add_process(10, "python train.py");
  run.add_thread(10, 10, "MainThread");
  run.add_thread(10, 11, "worker");
  for (const char* name : {"rss", "cpu", "gpu", "disk"}) {
    run.counter_tracks.push_back({run.strings.intern(name), 10, run.strings.intern("units")});
  }
  return run;
}

std::map<std::string, std::string> without_trimming(std::map<std::string, std::string> metadata) {
  for (const char* key : {trim_keys::kMaxSizeBytes, trim_keys::kTrimmedBeforeNs, trim_keys::kSamples,
                          trim_keys::kSpans, trim_keys::kFlows, trim_keys::kCounterValues}) {
    metadata.erase(key);
  }
  return metadata;
}

int64_t query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
  int64_t value = sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : -1;
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

void execute(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
}

int64_t used_bytes(const std::string& path) {
  return query(path, "SELECT (c.page_count - f.freelist_count) * s.page_size"
                     " FROM pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s");
}

int64_t file_bytes(const std::string& path) {
  return query(path, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()");
}

void expect_refused(const std::string& path, const std::string& expected) {
  try {
    load_run(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

class RunTrimmerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stepscope-trimmer-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    trimmed_ = (dir_ / "trimmed.db").string();
    whole_ = (dir_ / "whole.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes kCommits commits as a recorder does (trimmed after each, samples
  // and counter values dropped from memory), and the same run untrimmed;
  // returns the file's used and whole bytes after each trim.
  std::vector<std::pair<int64_t, int64_t>> record(int commits = kCommits) {
    std::vector<std::pair<int64_t, int64_t>> sizes;
    stepscope::Run run = new_run(), whole = new_run();
    RunWriter writer(trimmed_);
    writer.limit_size(kLimit);
    for (int commit = 0; commit < commits; ++commit) {
      add_commit(run, commit);
      add_commit(whole, commit);
      writer.commit(run);
      writer.trim_to_limit(run);
      writer.release_written(run);
      sizes.emplace_back(used_bytes(trimmed_), file_bytes(trimmed_));
    }
    save_run(whole, whole_);
    return sizes;
  }

  // The untrimmed run cut where the trimmed one starts.
  stepscope::Run whole_cut(int64_t from_ns) const {
    stepscope::Run cut = load_run(whole_);
    keep_window(cut, {from_ns, std::numeric_limits<int64_t>::max()});
    return cut;
  }

  fs::path dir_;
  std::string trimmed_, whole_;
};

TEST_F(RunTrimmerTest, TheFileStaysUnderItsLimitOnceTrimmed) {
  std::vector<std::pair<int64_t, int64_t>> sizes = record();
  int64_t one_commit = query(whole_, "SELECT page_size FROM pragma_page_size()") * 8;  // a commit's pages, at most
  int trims = 0;
  for (size_t commit = 1; commit < sizes.size(); ++commit) {
    auto [used, bytes] = sizes[commit];
    EXPECT_LE(used, static_cast<int64_t>(kLimit)) << "commit " << commit;
    EXPECT_LE(bytes, static_cast<int64_t>(kLimit) + one_commit) << "commit " << commit;
    trims += used < sizes[commit - 1].first;
  }
  EXPECT_GE(trims, 5) << "the limit is reached several times";
  EXPECT_GT(file_bytes(whole_), 2 * static_cast<int64_t>(kLimit)) << "the untrimmed run is far larger";
}

TEST_F(RunTrimmerTest, ATrimmedRunReadsAsTheWholeRunCutAtItsStart) {
  record();
  stepscope::Run trimmed = load_run(trimmed_);
  std::optional<Trimming> trimming = run_trimming(trimmed);
  ASSERT_TRUE(trimming);
  EXPECT_EQ(trimming->max_size_bytes, kLimit);
  EXPECT_GT(trimming->before_ns, (kCommits / 2) * kCommitNs) << "more than half the run is gone";
  EXPECT_LT(trimming->before_ns, (kCommits - 1) * kCommitNs) << "the newest commit is kept";
  stepscope::Run expected = whole_cut(trimming->before_ns);
  expect_same_data(expected, trimmed);
  EXPECT_FALSE(trimmed.flows.empty());
  EXPECT_EQ(without_trimming(trimmed.metadata), expected.metadata);
  EXPECT_EQ(trimmed.stacks.size(), expected.stacks.size()) << "stacks are never trimmed";
  EXPECT_EQ(trimmed.strings.size(), expected.strings.size()) << "strings are never trimmed";
  EXPECT_EQ(trimmed.threads, expected.threads);
  EXPECT_EQ(trimmed.counter_tracks.size(), 4u);
}

TEST_F(RunTrimmerTest, TheMetadataCountsTheRowsDeleted) {
  record();
  stepscope::Run trimmed = load_run(trimmed_);
  std::optional<Trimming> trimming = run_trimming(trimmed);
  ASSERT_TRUE(trimming);
  stepscope::Run whole = load_run(whole_);
  auto rows = [&](const char* sql) { return query(trimmed_, sql); };
  EXPECT_EQ(trimming->samples + rows("SELECT sum(count) FROM sample_blocks"),
            static_cast<int64_t>(whole.samples.size()));
  EXPECT_EQ(trimming->spans + rows("SELECT sum(count) FROM span_blocks"), static_cast<int64_t>(whole.spans.size()));
  EXPECT_EQ(trimming->flows + rows("SELECT count(*) FROM flows"), static_cast<int64_t>(whole.flows.size()));
  EXPECT_EQ(trimming->counter_values + rows("SELECT sum(count) FROM counter_blocks"),
            static_cast<int64_t>(whole.counter_values.size()));
  EXPECT_GT(trimming->samples, 0);
  EXPECT_GT(trimming->spans, 0);
  EXPECT_GT(trimming->flows, 0);
  EXPECT_GT(trimming->counter_values, 0);
  ASSERT_TRUE(trimming->seconds_dropped);
  EXPECT_DOUBLE_EQ(*trimming->seconds_dropped, static_cast<double>(trimming->before_ns) / 1e9);
  // Whole runs of rows went, from the first on: what is left starts where its runs do.
  const char* first_run = "SELECT min(first_id) FROM row_ranges WHERE rows = 'flows'";
  EXPECT_EQ(rows("SELECT min(id) FROM flows"), rows(first_run));
  EXPECT_GT(rows(first_run), 0);
  EXPECT_GT(rows("SELECT min(first_span) FROM span_blocks"), 0);
  EXPECT_GT(rows("SELECT min(first_sample) FROM sample_blocks"), 0);
  EXPECT_GT(rows("SELECT min(first_value) FROM counter_blocks"), 0);
}

TEST_F(RunTrimmerTest, WindowsOfATrimmedRunReadAsItsWholeCut) {
  record();
  RunFileReader file(trimmed_);
  stepscope::Run trimmed = file.load();
  int64_t start = run_trimming(trimmed)->before_ns;
  std::optional<TimeRange> extent = file.extent(), expected_extent = run_extent(trimmed);
  ASSERT_TRUE(extent && expected_extent);
  EXPECT_EQ(extent->from_ns, start) << "a trimmed run starts where its kept data does";
  EXPECT_EQ(extent->from_ns, expected_extent->from_ns);
  EXPECT_EQ(extent->to_ns, expected_extent->to_ns);
  for (TimeRange window : {TimeRange{start, start + 1'000 * kMs}, TimeRange{start - 5'000 * kMs, start + 10 * kMs},
                           TimeRange{start + 2'345 * kMs, extent->to_ns + 1}, TimeRange{0, start},
                           TimeRange{0, start - 10 * kMs}}) {
    SCOPED_TRACE(std::to_string(window.from_ns) + ":" + std::to_string(window.to_ns));
    stepscope::Run expected = load_run(trimmed_);
    keep_window(expected, window);
    stepscope::Run actual = RunFileReader(trimmed_).load(window);
    expect_same_data(expected, actual);
    EXPECT_EQ(expected.metadata, actual.metadata);
  }
  EXPECT_TRUE(RunFileReader(trimmed_).load(TimeRange{0, start}).samples.empty()) << "nothing before its start";
}

TEST_F(RunTrimmerTest, ACommitLargerThanTheLimitIsKept) {
  stepscope::Run run = new_run();
  RunWriter writer(trimmed_);
  writer.limit_size(kLimit);
  add_commit(run, 0, false);
  writer.commit(run);
  writer.trim_to_limit(run);
  for (int commit = 1; commit < 100; ++commit) add_commit(run, commit, false);  // one commit of ten seconds
  writer.commit(run);
  writer.trim_to_limit(run);
  ASSERT_GT(used_bytes(trimmed_), static_cast<int64_t>(kLimit));
  stepscope::Run read = load_run(trimmed_);
  std::optional<Trimming> trimming = run_trimming(read);
  ASSERT_TRUE(trimming) << "the first commit's rows went";
  EXPECT_LE(trimming->before_ns, kCommitNs);
  EXPECT_EQ(read.samples.front().ts_ns, kCommitNs) << "the newest commit's first sample";
  EXPECT_EQ(read.samples.back().ts_ns, 100 * kCommitNs - kMs / 4);
}

TEST_F(RunTrimmerTest, AFileUnderItsLimitIsLeftAlone) {
  record(20);
  stepscope::Run read = load_run(trimmed_);
  EXPECT_FALSE(run_trimming(read));
  EXPECT_EQ(read.samples.size(), load_run(whole_).samples.size());
}

// The reader takes a table starting after row 0 only from a run that says
// it was trimmed, and still checks what is left.
TEST_F(RunTrimmerTest, AFileMissingRowsIsStillRefused) {
  struct Case {
    bool trimmed;
    const char* sql;
    const char* expected;
  };
  for (const Case& c : {
           Case{false, "UPDATE span_blocks SET first_span = 1 WHERE id = 0",
                "table span_blocks row 0: expected first span 0"},
           Case{false, "DELETE FROM sample_blocks WHERE id = 0", "table sample_blocks row 1: expected row id 0"},
           Case{false, "DELETE FROM counter_blocks WHERE id = 0", "table counter_blocks row 1: expected row id 0"},
           Case{true, "DELETE FROM counter_blocks WHERE id = (SELECT min(id) + 1 FROM counter_blocks)",
                "table counter_blocks row"},
           Case{true, "DELETE FROM metadata WHERE key = 'trimmed_before_ns'", "expected row id 0"},
           Case{true, "DELETE FROM span_blocks WHERE id = (SELECT min(id) + 1 FROM span_blocks)",
                "table span_blocks row"},
           Case{true, "DELETE FROM row_ranges WHERE id = (SELECT min(id) FROM row_ranges WHERE rows = 'flows')",
                "table row_ranges covers rows"},
           Case{true, "DELETE FROM sample_blocks WHERE id = (SELECT min(id) + 1 FROM sample_blocks)",
                "table sample_blocks row"},
           Case{true, "UPDATE metadata SET value = 'soon' WHERE key = 'trimmed_before_ns'",
                "trimmed_before_ns is \"soon\", not a whole number"},
       }) {
    SCOPED_TRACE(c.sql);
    record(kCommits / 2);
    std::string path = c.trimmed ? trimmed_ : whole_;
    ASSERT_NO_THROW(ASSERT_EQ(run_trimming(load_run(path)).has_value(), c.trimmed));
    execute(path, c.sql);
    expect_refused(path, c.expected);
  }
}

}  // namespace
}  // namespace stepscope
