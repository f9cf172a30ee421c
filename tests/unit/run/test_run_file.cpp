#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "run/run_file.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

class RunFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stepscope-run-file-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// A run with a row in every table and hostile bytes in names.
Run make_full_run() {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "10000000";
  run.metadata["command"] = std::string("python \"t\xff.py\"\n;<x>", 20);
  Process& p = run.add_process(100, "python train.py", 1);
  p.start_ns = 5;
  p.end_ns = 900;
  p.exit_status = 137;
  run.add_thread(100, 100, "MainThread");
  run.add_thread(100, 101, std::string("pt_data\0worker", 14));
  FrameId f1 = run.intern_frame("main", "/x/train.py", 3);
  FrameId f2 = run.intern_frame("<script>alert(1)</script>", "a;b c.py", 7);
  FrameId f3 = run.intern_frame("memcpy", "", 0, FrameKind::kNative);
  StackId s = run.stacks.intern({f1, f2, f3});
  run.samples.push_back({10, 100, 100, s, ThreadState::kRunning, true});
  run.samples.push_back({20, 100, 101, run.stacks.node(s).parent, ThreadState::kDiskWait});
  run.spans.push_back({10, 30, 100, 100, SpanKind::kStep, run.strings.intern("step")});
  run.spans.push_back({12, 18, 7, 1, SpanKind::kKernel, run.strings.intern("gemm"), 4242, 0,
                       run.strings.intern("[[2, 3], []]")});
  run.spans.push_back({19, 20, 7, 2, SpanKind::kMemcpy, run.strings.intern("Memcpy HtoD"), 4243, 1 << 20});
  run.flows.push_back({0, 1, run.strings.intern("ac2g")});
  run.counter_tracks.push_back({run.strings.intern("rss"), 100, run.strings.intern("bytes")});
  run.counter_values.push_back({0, 15, 1.5e9});
  return run;
}

void expect_same_run(const Run& a, const Run& b) {
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (StringId i = 0; i < a.strings.size(); ++i) EXPECT_EQ(a.strings.get(i), b.strings.get(i));
  EXPECT_EQ(a.frames.all(), b.frames.all());
  ASSERT_EQ(a.stacks.size(), b.stacks.size());
  for (StackId i = 0; i < a.stacks.size(); ++i) EXPECT_EQ(a.stacks.frames(i), b.stacks.frames(i));
  ASSERT_EQ(a.samples.size(), b.samples.size());
  for (size_t i = 0; i < a.samples.size(); ++i) {
    EXPECT_EQ(a.samples[i].ts_ns, b.samples[i].ts_ns);
    EXPECT_EQ(a.samples[i].tid, b.samples[i].tid);
    EXPECT_EQ(a.samples[i].stack, b.samples[i].stack);
    EXPECT_EQ(a.samples[i].state, b.samples[i].state);
    EXPECT_EQ(a.samples[i].holds_gil, b.samples[i].holds_gil);
  }
  ASSERT_EQ(a.spans.size(), b.spans.size());
  for (size_t i = 0; i < a.spans.size(); ++i) {
    EXPECT_EQ(a.spans[i].start_ns, b.spans[i].start_ns);
    EXPECT_EQ(a.spans[i].end_ns, b.spans[i].end_ns);
    EXPECT_EQ(a.spans[i].kind, b.spans[i].kind);
    EXPECT_EQ(a.spans[i].name, b.spans[i].name);
  }
  ASSERT_EQ(a.flows.size(), b.flows.size());
  EXPECT_EQ(a.flows[0].to, b.flows[0].to);
  ASSERT_EQ(a.counter_values.size(), b.counter_values.size());
  EXPECT_EQ(a.counter_values[0].value, b.counter_values[0].value);
  EXPECT_EQ(a.counter_tracks[0].unit, b.counter_tracks[0].unit);
  ASSERT_EQ(a.processes.size(), b.processes.size());
  EXPECT_EQ(a.processes[0].end_ns, b.processes[0].end_ns);
  EXPECT_EQ(a.processes[0].parent_pid, b.processes[0].parent_pid);
  EXPECT_EQ(a.processes[0].exit_status, b.processes[0].exit_status);
  ASSERT_EQ(a.threads.size(), b.threads.size());
  EXPECT_EQ(a.strings.get(a.threads[1].name), b.strings.get(b.threads[1].name));
  EXPECT_EQ(a.metadata, b.metadata);
}

TEST_F(RunFileTest, RoundTripKeepsEveryTableAndEveryByte) {
  stepscope::Run run = make_full_run();
  save_run(run, path("run.db"));
  expect_same_run(run, load_run(path("run.db")));
}

TEST_F(RunFileTest, IncrementalCommitsAppendAndUpdate) {
  stepscope::Run run = make_full_run();
  RunWriter writer(path("run.db"));
  writer.commit(run);
  EXPECT_EQ(load_run(path("run.db")).samples.size(), 2u);

  FrameId f = run.intern_frame("later", "late.py", 1);
  run.samples.push_back({40, 100, 100, run.stacks.intern({f}), ThreadState::kIdle});
  run.processes[0].end_ns = 1234;
  run.threads[0].name = run.strings.intern("renamed");
  run.metadata["steps"] = "7";
  writer.commit(run);
  writer.commit(run);  // nothing new: a no-op, not a duplicate

  stepscope::Run loaded = load_run(path("run.db"));
  expect_same_run(run, loaded);
  EXPECT_EQ(loaded.samples.size(), 3u);
  EXPECT_EQ(loaded.processes[0].end_ns, 1234);
  EXPECT_EQ(loaded.strings.get(loaded.threads[0].name), "renamed");
}

// A recorder drops the samples and counter values each commit wrote: the
// file still holds every one, numbered on, and a window finds them.
TEST_F(RunFileTest, ReleasedRowsStayInTheFileAndLeaveMemory) {
  stepscope::Run run;
  StackId stack = run.stacks.intern({run.intern_frame("f", "x.py", 1)});
  run.counter_tracks.push_back({run.strings.intern("rss"), 1, run.strings.intern("bytes")});
  RunWriter writer(path("run.db"));
  std::vector<int64_t> times;
  for (int64_t commit = 0; commit < 5; ++commit) {
    for (int64_t i = 0; i < 3000; ++i) {  // a commit of a block or two
      times.push_back(commit * 10'000 + i);
      run.samples.push_back({times.back(), 1, 1, stack, ThreadState::kRunning});
      run.counter_values.push_back({0, times.back(), static_cast<double>(times.size())});
    }
    writer.commit(run);
    run.samples.push_back({times.back() + 1, 1, 2, stack, ThreadState::kIdle});  // not yet written: kept
    run.counter_values.push_back({0, times.back() + 1, static_cast<double>(times.size() + 1)});
    times.push_back(times.back() + 1);
    writer.release_written(run);
    ASSERT_EQ(run.samples.size(), 1u);
    ASSERT_EQ(run.counter_values.size(), 1u);
    EXPECT_EQ(run.samples_dropped, times.size() - 1);
    EXPECT_EQ(run.counter_values_dropped, times.size() - 1);
  }
  writer.commit(run);
  stepscope::Run loaded = load_run(path("run.db"));
  ASSERT_EQ(loaded.samples.size(), times.size());
  ASSERT_EQ(loaded.counter_values.size(), times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    ASSERT_EQ(loaded.samples[i].ts_ns, times[i]) << i;
    ASSERT_EQ(loaded.counter_values[i].value, static_cast<double>(i + 1)) << i;
  }
  EXPECT_EQ(loaded.samples[3000].tid, 2);
  stepscope::Run window = RunFileReader(path("run.db")).load(TimeRange{20'000, 30'000});
  EXPECT_EQ(window.samples.size(), 3001u);
  EXPECT_EQ(window.counter_values.size(), 3002u) << "and the one at its end, 30000";
}

// A commit rewrites only the rows of the mutable tables that changed: rows
// changed here and there, in runs longer than a statement's 64, rows added
// after them and a metadata value changed among unchanged ones all reach the
// file, and the rows left alone stay as they were.
TEST_F(RunFileTest, CommitsRewriteTheChangedRowsOfTheMutableTables) {
  stepscope::Run run;
  for (int64_t pid = 1; pid <= 200; ++pid) {
    run.add_process(pid, "worker " + std::to_string(pid), 1);
    run.add_thread(pid, pid, "main");
  }
  run.metadata["a"] = "1";
  run.metadata["b"] = "2";
  RunWriter writer(path("run.db"));
  writer.commit(run);
  for (size_t i = 0; i < run.processes.size(); i += 7) run.processes[i].end_ns = 1000 + static_cast<int64_t>(i);
  for (size_t i = 100; i < 180; ++i) run.processes[i].exit_status = static_cast<int32_t>(i % 5);
  run.threads[199].name = run.strings.intern("renamed");
  run.add_process(201, "late", 1);
  run.add_thread(201, 201, "late");
  run.metadata["b"] = "3";
  writer.commit(run);
  run.processes[3].end_ns = 77;
  writer.commit(run);
  stepscope::Run loaded = load_run(path("run.db"));
  ASSERT_EQ(loaded.processes.size(), 201u);
  ASSERT_EQ(loaded.threads.size(), 201u);
  for (size_t i = 0; i < run.processes.size(); ++i) {
    const Process& want = run.processes[i];
    const Process& got = loaded.processes[i];
    EXPECT_EQ(got.pid, want.pid);
    EXPECT_EQ(got.end_ns, want.end_ns) << "process " << i;
    EXPECT_EQ(got.exit_status, want.exit_status) << "process " << i;
    EXPECT_EQ(loaded.strings.get(got.command), run.strings.get(want.command));
    EXPECT_EQ(loaded.strings.get(loaded.threads[i].name), run.strings.get(run.threads[i].name));
  }
  EXPECT_EQ(loaded.processes[3].end_ns, 77);
  EXPECT_EQ(loaded.processes[7].end_ns, 1007);
  EXPECT_EQ(loaded.processes[8].end_ns, 0);
  EXPECT_EQ(loaded.processes[150].exit_status, 0);
  EXPECT_EQ(loaded.processes[151].exit_status, 1);
  EXPECT_EQ(loaded.processes[99].exit_status, -1);
  EXPECT_EQ(loaded.strings.get(loaded.threads[199].name), "renamed");
  EXPECT_EQ(loaded.metadata.at("a"), "1");
  EXPECT_EQ(loaded.metadata.at("b"), "3");
}

// Rows go in multi-row statements of up to 64 rows, the rest one by one:
// commits that end below, on and past a statement's worth, spread over
// several commits, keep every row, in order, each with its own values.
TEST_F(RunFileTest, CommitsOfEverySizeAroundAStatementsRowsKeepEveryRow) {
  stepscope::Run run = make_full_run();
  RunWriter writer(path("run.db"));
  size_t expected = run.samples.size();
  for (size_t added : {0, 1, 63, 64, 65, 127, 128, 129, 1000}) {
    for (size_t i = 0; i < added; ++i) {
      const int64_t n = static_cast<int64_t>(run.samples.size());
      FrameId f = run.intern_frame("f" + std::to_string(n), "many.py", static_cast<int>(n));
      run.samples.push_back({1000 + n, 100, static_cast<int32_t>(100 + n % 3), run.stacks.intern({f}),
                             n % 2 ? ThreadState::kRunning : ThreadState::kIdle, n % 5 == 0});
      run.counter_values.push_back({0, 1000 + n, 0.5 * static_cast<double>(n)});
    }
    expected += added;
    writer.commit(run);
    stepscope::Run loaded = load_run(path("run.db"));
    ASSERT_EQ(loaded.samples.size(), expected);
    expect_same_run(run, loaded);
    for (size_t i = 0; i < loaded.counter_values.size(); ++i) {
      ASSERT_EQ(loaded.counter_values[i].ts_ns, run.counter_values[i].ts_ns) << i;
      ASSERT_EQ(loaded.counter_values[i].value, run.counter_values[i].value) << i;
    }
  }
}

// Frames and stacks go in blocks of kRowsPerStackBlock, numbered by their
// place: a commit that adds to the last, partly full block writes it again,
// so the file holds as many blocks as the rows fill, whatever the commits.
TEST_F(RunFileTest, TheLastBlockOfFramesAndStacksGrowsInPlace) {
  stepscope::Run run = make_full_run();
  RunWriter writer(path("run.db"));
  for (size_t commit = 0; commit < 12; ++commit) {
    for (size_t i = 0; i < 300; ++i) {
      FrameId f = run.intern_frame(fmt::format("f{}_{}", commit, i), "grow.py", static_cast<int>(i));
      run.stacks.intern({f, f});
    }
    writer.commit(run);
  }
  expect_same_run(run, load_run(path("run.db")));
  auto blocks = [&](const char* table) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path("run.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* count = nullptr;
    sqlite3_prepare_v2(db, fmt::format("SELECT count(*), sum(count) FROM {}", table).c_str(), -1, &count, nullptr);
    EXPECT_EQ(sqlite3_step(count), SQLITE_ROW);
    std::pair<int64_t, int64_t> result{sqlite3_column_int64(count, 0), sqlite3_column_int64(count, 1)};
    sqlite3_finalize(count);
    sqlite3_close(db);
    return result;
  };
  // 3 + 3600 frames; 3 + 7200 stacks besides the root.
  EXPECT_EQ(blocks("frame_blocks"), std::make_pair(int64_t{4}, int64_t{3603}));
  EXPECT_EQ(blocks("stack_blocks"), std::make_pair(int64_t{8}, int64_t{7203}));
}

TEST_F(RunFileTest, EmptyRunRoundTrips) {
  save_run(stepscope::Run{}, path("empty.db"));
  stepscope::Run loaded = load_run(path("empty.db"));
  EXPECT_EQ(loaded.strings.size(), 1u);
  EXPECT_EQ(loaded.stacks.size(), 1u);
  EXPECT_TRUE(loaded.samples.empty());
}

// A writer killed at any moment leaves a file that opens and holds whole
// commits: each commit here adds exactly kBatch samples with new stacks.
TEST_F(RunFileTest, WriterKilledMidWriteLeavesCommittedData) {
  constexpr int kBatch = 500;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::string file = path("killed" + std::to_string(attempt) + ".db");
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      stepscope::Run run;
      run.metadata["sample_period_ns"] = "1000";
      RunWriter writer(file);
      for (int commit = 0; commit < 100000; ++commit) {
        for (int i = 0; i < kBatch; ++i) {
          FrameId frame = run.intern_frame("f" + std::to_string(commit), "x.py", i);
          run.samples.push_back({commit, 1, 1, run.stacks.intern({frame}), ThreadState::kRunning});
        }
        writer.commit(run);
      }
      _exit(0);
    }
    // Let it commit a few times, then kill it somewhere inside a commit.
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 37 * attempt));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it was killed";

    stepscope::Run loaded = load_run(file);
    EXPECT_GT(loaded.samples.size(), 0u);
    EXPECT_EQ(loaded.samples.size() % kBatch, 0u);
    EXPECT_EQ(loaded.stacks.size(), loaded.samples.size() + 1);
    EXPECT_EQ(loaded.metadata.at("sample_period_ns"), "1000");
  }
}

int64_t count_samples_read_only(const std::string& file) {
  sqlite3* db = nullptr;
  int64_t count = -1;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT total(count) FROM sample_blocks", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      count = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return count;
}

// Between commits (where a killed recorder almost always stops) the file
// needs no journal: a read-only reader sees every committed row, and so does
// one given a copy of the file alone. A finished writer leaves no journal.
TEST_F(RunFileTest, FileBetweenCommitsReadsWithoutItsJournal) {
  const std::string file = path("between.db");
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "1000";
  FrameId frame = run.intern_frame("f", "x.py", 1);
  StackId stack = run.stacks.intern({frame});
  {
    RunWriter writer(file);
    for (int64_t commit = 1; commit <= 3; ++commit) {
      for (int i = 0; i < 10; ++i) run.samples.push_back({commit, 1, 1, stack, ThreadState::kRunning});
      writer.commit(run);
      EXPECT_EQ(count_samples_read_only(file), 10 * commit);
      fs::copy_file(file, path("copy.db"), fs::copy_options::overwrite_existing);
      EXPECT_EQ(count_samples_read_only(path("copy.db")), 10 * commit);
    }
    EXPECT_FALSE(fs::exists(file + "-journal")) << "none between commits";
  }
  EXPECT_FALSE(fs::exists(file + "-journal"));
  EXPECT_EQ(load_run(file).samples.size(), 30u);
}

TEST_F(RunFileTest, MissingFileSaysSo) {
  try {
    load_run(path("nope.db"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.db: no such file"), std::string::npos) << e.what();
  }
}

void expect_load_error(const std::string& file, const std::string& expected) {
  try {
    load_run(file);
    FAIL() << "no error for " << file;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
}

void run_sql(const std::string& file, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST_F(RunFileTest, TextFileIsNotARun) {
  std::ofstream(path("notes.txt")) << "hello, this is not a database\n";
  expect_load_error(path("notes.txt"), "is not a stepscope run");
}

TEST_F(RunFileTest, OtherSqliteDatabaseIsNotARun) {
  run_sql(path("other.db"), "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  expect_load_error(path("other.db"), "is not a stepscope run");
}

TEST_F(RunFileTest, OtherSchemaVersionIsRefused) {
  save_run(make_full_run(), path("v99.db"));
  run_sql(path("v99.db"), "UPDATE meta SET value = '99' WHERE key = 'schema_version';");
  expect_load_error(path("v99.db"), "has run schema version 99; this stepscope reads versions 1 to 6");
}

// Turns a file written now into one of schema 5: a row per frame and per
// stack.
void make_schema_five(const std::string& file, const Run& run) {
  std::string sql =
      "UPDATE meta SET value = '5' WHERE key = 'schema_version'; DROP TABLE frame_blocks; DROP TABLE stack_blocks;"
      "CREATE TABLE frames(id INTEGER PRIMARY KEY, function INTEGER NOT NULL, file INTEGER NOT NULL,"
      " line INTEGER NOT NULL, kind INTEGER NOT NULL);"
      "CREATE TABLE stacks(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL, frame INTEGER NOT NULL);";
  for (FrameId i = 0; i < run.frames.size(); ++i) {
    const Frame& f = run.frames.get(i);
    sql += fmt::format("INSERT INTO frames VALUES ({}, {}, {}, {}, {});", i, f.function, f.file, f.line,
                       static_cast<int>(f.kind));
  }
  for (StackId i = 1; i < run.stacks.size(); ++i) {
    sql += fmt::format("INSERT INTO stacks VALUES ({}, {}, {});", i, run.stacks.node(i).parent,
                       run.stacks.node(i).frame);
  }
  run_sql(file, sql.c_str());
}

TEST_F(RunFileTest, SchemaVersionFiveStillLoads) {
  stepscope::Run run = make_full_run();
  save_run(run, path("v5.db"));
  make_schema_five(path("v5.db"), run);
  expect_same_run(run, load_run(path("v5.db")));
  run_sql(path("v5.db"), "UPDATE stacks SET parent = 99 WHERE id = 2");
  expect_load_error(path("v5.db"), "table stacks row 2: parent 99 does not precede it");
  save_run(run, path("v5.db"));
  make_schema_five(path("v5.db"), run);
  run_sql(path("v5.db"), "UPDATE frames SET file = 999 WHERE id = 1");
  expect_load_error(path("v5.db"), "table frames row 1: string 999 does not exist");
}

// Turns a file written now into one of schema 4: a row per span, a run of
// them in row_ranges (and a row per frame and stack).
void make_schema_four(const std::string& file, const Run& run) {
  make_schema_five(file, run);
  std::string sql =
      "UPDATE meta SET value = '4' WHERE key = 'schema_version'; DROP TABLE span_blocks;"
      "CREATE TABLE spans(id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
      " pid INTEGER NOT NULL, tid INTEGER NOT NULL, kind INTEGER NOT NULL, name INTEGER NOT NULL,"
      " correlation INTEGER NOT NULL, bytes INTEGER NOT NULL, detail INTEGER NOT NULL);";
  for (size_t i = 0; i < run.spans.size(); ++i) {
    const Span& s = run.spans[i];
    sql += fmt::format("INSERT INTO spans VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {});", i, s.start_ns, s.end_ns,
                       s.pid, s.tid, static_cast<int>(s.kind), s.name, s.correlation, s.bytes, s.detail);
  }
  if (!run.spans.empty()) {
    auto [low, high] = std::ranges::minmax_element(run.spans, {}, &Span::start_ns);
    sql += fmt::format("INSERT INTO row_ranges(rows, first_id, count, low, high, latest_ns) VALUES "
                       "('spans', 0, {}, {}, {}, {});",
                       run.spans.size(), low->start_ns, high->start_ns,
                       std::ranges::max_element(run.spans, {}, &Span::end_ns)->end_ns);
  }
  run_sql(file, sql.c_str());
}

TEST_F(RunFileTest, SchemaVersionFourStillLoads) {
  stepscope::Run run = make_full_run();
  ASSERT_FALSE(run.spans.empty());
  save_run(run, path("v4.db"));
  make_schema_four(path("v4.db"), run);
  expect_same_run(run, load_run(path("v4.db")));
  run_sql(path("v4.db"), "UPDATE spans SET kind = 200 WHERE id = 0");
  expect_load_error(path("v4.db"), "table spans row 0: unknown span kind 200");
}

// And into one of schema 3: a row per counter value too.
void make_schema_three(const std::string& file, const Run& run) {
  make_schema_four(file, run);
  std::string sql =
      "UPDATE meta SET value = '3' WHERE key = 'schema_version'; DROP TABLE counter_blocks;"
      "CREATE TABLE counter_values(id INTEGER PRIMARY KEY, track INTEGER NOT NULL, ts_ns INTEGER NOT NULL,"
      " value REAL NOT NULL);";
  for (size_t i = 0; i < run.counter_values.size(); ++i) {
    const CounterValue& v = run.counter_values[i];
    sql += fmt::format("INSERT INTO counter_values VALUES ({}, {}, {}, {:.17g});", i, v.track, v.ts_ns, v.value);
  }
  if (!run.counter_values.empty()) {
    auto [low, high] = std::ranges::minmax_element(run.counter_values, {}, &CounterValue::ts_ns);
    sql += fmt::format("INSERT INTO row_ranges(rows, first_id, count, low, high, latest_ns) VALUES "
                       "('counter_values', 0, {}, {}, {}, {});",
                       run.counter_values.size(), low->ts_ns, high->ts_ns, high->ts_ns);
  }
  run_sql(file, sql.c_str());
}

TEST_F(RunFileTest, SchemaVersionThreeStillLoads) {
  stepscope::Run run = make_full_run();
  ASSERT_FALSE(run.counter_values.empty());
  save_run(run, path("v3.db"));
  make_schema_three(path("v3.db"), run);
  expect_same_run(run, load_run(path("v3.db")));
  run_sql(path("v3.db"), "UPDATE counter_values SET track = 99 WHERE id = 0");
  expect_load_error(path("v3.db"), "table counter_values row 0: counter track 99 does not exist");
}

// Turns a file written now into one of schema 2: a row per sample and
// counter value, no blocks.
void make_schema_two(const std::string& file, const Run& run) {
  make_schema_three(file, run);
  std::string sql =
      "UPDATE meta SET value = '2' WHERE key = 'schema_version'; DROP TABLE sample_blocks;"
      "CREATE TABLE samples(id INTEGER PRIMARY KEY, ts_ns INTEGER NOT NULL, pid INTEGER NOT NULL,"
      " tid INTEGER NOT NULL, stack INTEGER NOT NULL, state INTEGER NOT NULL, gil INTEGER NOT NULL);";
  for (size_t i = 0; i < run.samples.size(); ++i) {
    const Sample& s = run.samples[i];
    sql += "INSERT INTO samples VALUES (" + std::to_string(i) + "," + std::to_string(s.ts_ns) + "," +
           std::to_string(s.pid) + "," + std::to_string(s.tid) + "," + std::to_string(s.stack) + "," +
           std::to_string(static_cast<int>(s.state)) + "," + std::to_string(int{s.holds_gil}) + ");";
  }
  run_sql(file, sql.c_str());
}

TEST_F(RunFileTest, SchemaVersionTwoStillLoads) {
  stepscope::Run run = make_full_run();
  save_run(run, path("v2.db"));
  make_schema_two(path("v2.db"), run);
  expect_same_run(run, load_run(path("v2.db")));
}

// A version-1 file (spans without correlation, bytes, detail) still loads,
// its spans getting the defaults.
TEST_F(RunFileTest, SchemaVersionOneStillLoads) {
  stepscope::Run run = make_full_run();
  save_run(run, path("v1.db"));
  make_schema_two(path("v1.db"), run);
  run_sql(path("v1.db"),
          "UPDATE meta SET value = '1' WHERE key = 'schema_version';"
          "ALTER TABLE spans DROP COLUMN correlation; ALTER TABLE spans DROP COLUMN bytes;"
          "ALTER TABLE spans DROP COLUMN detail;");
  for (Span& span : run.spans) span.correlation = span.bytes = 0, span.detail = StringTable::kEmpty;
  expect_same_run(run, load_run(path("v1.db")));
}

// Rows of samples in a schema-2 file are checked as blocks are.
TEST_F(RunFileTest, SchemaTwoSampleRowsAreChecked) {
  stepscope::Run run = make_full_run();
  save_run(run, path("v2.db"));
  make_schema_two(path("v2.db"), run);
  run_sql(path("v2.db"), "UPDATE samples SET stack = 99 WHERE id = 1");
  expect_load_error(path("v2.db"), "table samples row 1: stack 99 does not exist");
}

TEST_F(RunFileTest, DanglingReferencesNameTableAndRow) {
  struct Case {
    const char* sql;
    const char* expected;
  };
  for (const Case& c : {Case{"UPDATE stack_blocks SET first_stack = 0", "stack_blocks row 0: expected first stack 1"},
                        Case{"UPDATE stack_blocks SET count = 2", "stack_blocks row 0: a frame id out of range"},
                        Case{"UPDATE stack_blocks SET data = x'0a78'", "stack_blocks row 0: corrupt compressed stacks"},
                        Case{"UPDATE frame_blocks SET count = 0", "table frame_blocks row 0: a count of 0 frames"},
                        Case{"UPDATE frame_blocks SET id = 1", "table frame_blocks row 1: expected row id 0"},
                        Case{"DELETE FROM strings WHERE id > 5", "table frame_blocks row 0: string 6 does not exist"},
                        Case{"UPDATE sample_blocks SET first_sample = 5", "expected first sample 0"},
                        Case{"UPDATE sample_blocks SET count = 0", "a count of 0 samples"},
                        Case{"UPDATE sample_blocks SET count = 3", "table sample_blocks row 0"},
                        Case{"UPDATE sample_blocks SET data = x'0a78'", "corrupt compressed samples"},
                        Case{"UPDATE sample_blocks SET end_ns = 15", "a sample at 20 ns outside the block's"},
                        Case{"UPDATE counter_blocks SET data = x'0a78'", "corrupt compressed counter values"},
                        Case{"UPDATE counter_blocks SET end_ns = 10", "a counter value at 15 ns outside the block's"},
                        Case{"DELETE FROM counter_tracks", "counter_blocks row 0: counter track 0 does not exist"},
                        Case{"UPDATE span_blocks SET data = x'0a78'", "table span_blocks row 0: bad block header"},
                        Case{"UPDATE span_blocks SET start_ns = start_ns + 1", "a span at 10 ns outside the block's"},
                        Case{"UPDATE flows SET to_span = 5 WHERE id = 0", "span 5 does not exist"},
                        Case{"DELETE FROM strings WHERE id = 3", "expected row id 3"}}) {
    std::string file = path("broken.db");
    save_run(make_full_run(), file);
    run_sql(file, c.sql);
    expect_load_error(file, c.expected);
  }
}

}  // namespace
}  // namespace stepscope
