// Samples, spans with their flows, and counters are read side by side, each
// on a thread and a connection of its own (run_reader.cpp): the Run must be
// the one a read of one table after another gave, kernel names demangled into
// the same string ids, and the error reported the one such a read met first.
#include <unistd.h>

#include <filesystem>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "run/run_file.hpp"
#include "run/span_block.hpp"
#include "run_rows.hpp"
#include "util/demangle.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMangledGemm = "_Z4gemmPfS_i";
constexpr const char* kMangledRelu = "_ZN2at4reluEPKfPfi";
constexpr int64_t kKernels = 5'000;

// Enough rows of each table read side by side that the reads overlap:
// samples in several blocks, launches and kernels named as CUPTI names them
// (relu first, then gemm), a flow from each launch to its kernel, counter
// values, and a cpu op named as a kernel is, which keeps its name. Its
// command line is long enough to take the file past the size from which
// tables are read side by side (smaller files, one after another, are what
// every other run file test reads).
Run mangled_kernels_run() {
  Run run;
  run.add_process(10, "python train.py --config " + std::string(9 << 20, 'x'));
  run.add_thread(10, 10, "MainThread");
  StackId stack = run.stacks.intern({run.intern_frame("train", "t.py", 1)});
  for (int64_t i = 0; i < 20'000; ++i) run.samples.push_back({i * 1000, 10, 10, stack, ThreadState::kRunning, true});
  StringId gemm = run.strings.intern(kMangledGemm), relu = run.strings.intern(kMangledRelu);
  StringId launch = run.strings.intern("cudaLaunchKernel"), ac2g = run.strings.intern("ac2g");
  for (int64_t i = 0; i < kKernels; ++i) {
    auto from = static_cast<SpanId>(run.spans.size());
    run.spans.push_back({i * 4000, i * 4000 + 10, 10, 10, SpanKind::kRuntimeCall, launch, i});
    run.spans.push_back({i * 4000 + 20, i * 4000 + 30, 7, 1, SpanKind::kKernel, i % 3 ? gemm : relu, i});
    run.flows.push_back({from, from + 1, ac2g});
  }
  run.spans.push_back({0, 5, 10, 10, SpanKind::kCpuOp, gemm});
  run.counter_tracks.push_back({run.strings.intern("rss"), 10, run.strings.intern("bytes")});
  for (int64_t i = 0; i < 20'000; ++i) run.counter_values.push_back({0, i * 1000, double(i)});
  return run;
}

// What reading `written` back one table after another gives: the demangled
// kernel names interned after the file's strings, in the order of the
// kernels that first bear them.
Run as_read(Run written) {
  StringId mangled_relu = *written.strings.find(kMangledRelu);
  StringId relu = written.strings.intern(demangled(kMangledRelu));
  StringId gemm = written.strings.intern(demangled(kMangledGemm));
  for (Span& span : written.spans) {
    if (span.kind == SpanKind::kKernel) span.name = span.name == mangled_relu ? relu : gemm;
  }
  return written;
}


void expect_same_run(const Run& expected, const Run& actual) {
  ASSERT_EQ(expected.strings.size(), actual.strings.size());
  for (StringId i = 0; i < expected.strings.size(); ++i) EXPECT_EQ(expected.strings.get(i), actual.strings.get(i));
  EXPECT_EQ(expected.stacks.size(), actual.stacks.size());
  test::expect_same_data(expected, actual);
  EXPECT_EQ(expected.processes, actual.processes);
  EXPECT_EQ(expected.threads, actual.threads);
}

class RunReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = (fs::temp_directory_path() / ("stepscope-reader-" + std::to_string(getpid()) + ".db")).string();
  }
  void TearDown() override { fs::remove(file_); }

  void run_sql(const std::string& sql) const {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  // Several times, as the threads may finish in any order.
  void expect_load_error(const std::string& expected) const {
    for (int attempt = 0; attempt < 5; ++attempt) {
      try {
        load_run(file_);
        ADD_FAILURE() << "no error";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(file_ + ": " + expected), std::string::npos) << e.what();
      }
    }
  }

  std::string file_;
};

TEST_F(RunReaderTest, ReadSideBySideTheRunIsTheOneReadTableAfterTable) {
  stepscope::Run written = mangled_kernels_run();
  save_run(written, file_);
  stepscope::Run expected = as_read(mangled_kernels_run());
  ASSERT_EQ(expected.strings.size(), written.strings.size() + 2) << "both names demangle";
  for (int attempt = 0; attempt < 5; ++attempt) {
    SCOPED_TRACE(attempt);
    expect_same_run(expected, load_run(file_));
    // A window holding everything goes the windowed way through every table.
    expect_same_run(expected, RunFileReader(file_).load(TimeRange{0, kKernels * 4000}));
  }
}

// Broken in several tables at once, a file is refused for the break a read
// of one table after another met first: samples, spans, flows, counter
// tracks, then counter values, whichever thread fails first.
TEST_F(RunReaderTest, TheErrorIsTheOneATableAfterTableReadMetFirst) {
  const std::vector<std::pair<std::string, std::string>> breaks = {
      {"UPDATE sample_blocks SET count = 0 WHERE id = 1;", "table sample_blocks row 1: a count of 0 samples"},
      {"UPDATE span_blocks SET data = x'0a78' WHERE id = 0;", "table span_blocks row 0: bad block header"},
      {"UPDATE flows SET to_span = 99999 WHERE id = 3;", "table flows row 3: span 99999 does not exist"},
      {"UPDATE counter_tracks SET unit = 9999 WHERE id = 0;",
       "table counter_tracks row 0: string 9999 does not exist"},
      {"UPDATE counter_blocks SET data = x'0a78' WHERE id = 0;",
       "table counter_blocks row 0: bad block header"},
  };
  for (size_t first = 0; first < breaks.size(); ++first) {
    SCOPED_TRACE(breaks[first].second);
    save_run(mangled_kernels_run(), file_);
    for (size_t later = first; later < breaks.size(); ++later) run_sql(breaks[later].first);
    expect_load_error(breaks[first].second);
  }
}

// A last block whose first row claims billions of rows before it reserves
// no more than a few times the file's size: the read finds the lie.
TEST_F(RunReaderTest, ABlockClaimingBillionsOfRowsIsRefusedNotReserved) {
  stepscope::Run written = mangled_kernels_run();
  save_run(written, file_);
  const size_t last_block = (written.spans.size() - 1) / 4096;  // the writer's blocks hold 4096 spans
  ASSERT_GT(last_block, 0u);
  run_sql(fmt::format("UPDATE span_blocks SET first_span = 4000000000000000000 WHERE id = {};", last_block));
  expect_load_error(fmt::format("table span_blocks row {}: expected first span {}", last_block, last_block * 4096));
}

// A string id past the file's strings names no string of the file, even
// where a demangled kernel name has that id in the Run being read.
TEST_F(RunReaderTest, AStringIdPastTheFilesIsRefusedThoughADemangledNameHasIt) {
  stepscope::Run written = mangled_kernels_run();
  save_run(written, file_);
  written.spans.back().detail = static_cast<StringId>(written.strings.size());
  // The last block, written again with that span (the writer's blocks hold 4096 spans).
  const size_t last_block = (written.spans.size() - 1) / 4096;
  std::string block;
  for (unsigned char byte : encode_span_block(std::span(written.spans).subspan(last_block * 4096))) {
    block += fmt::format("{:02x}", byte);
  }
  run_sql(fmt::format("UPDATE span_blocks SET data = x'{}' WHERE id = {}", block, last_block));
  expect_load_error(
      fmt::format("table span_blocks row {}: string {} does not exist", last_block, written.strings.size()));
}

}  // namespace
}  // namespace stepscope
