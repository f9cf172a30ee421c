// The importer on two threads (trace_event_pipeline.hpp): the pieces come
// out in order whatever the buffer size, and an import through the reading
// thread gives byte for byte the Run, the warnings and the errors of the
// one-thread import, on every real trace of ../shared/testdata and on broken
// input, and it stops (no hang, no std::terminate) whichever side fails.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "chrome_trace_test_support.hpp"
#include "importers/chrome_trace.hpp"
#include "importers/trace_event_pipeline.hpp"
#include "kineto_testdata.hpp"
#include "run_difference.hpp"
#include "util/error.hpp"
#include "util/file_bytes.hpp"

namespace stepscope {
namespace {

ChromeTraceOptions options(ImportThreads threads, size_t chunk_size = size_t{4} << 20, bool plain = true,
                           bool strict = false) {
  ChromeTraceOptions result;
  result.threads = threads;
  result.chunk_size = chunk_size;
  result.plain_event_reader = plain;
  result.strict = strict;
  return result;
}

// The import's error ("" when it imports) and the Run.
struct Outcome {
  std::string error;
  stepscope::Run run;
};

Outcome import_bytes(const std::string& json, const ChromeTraceOptions& how) {
  Outcome outcome;
  try {
    outcome.run = import_chrome_trace_bytes(json, "trace.json", how);
  } catch (const InputError& error) {
    outcome.error = error.what();
  }
  return outcome;
}

// Imports `json` on one thread and on two at several buffer sizes and with
// and without the plain reader: the same Run or the same error. Returns
// the one-thread outcome's error.
std::string expect_same_on_two_threads(const std::string& json, bool strict = false) {
  Outcome one = import_bytes(json, options(ImportThreads::kOne, size_t{4} << 20, true, strict));
  for (size_t chunk : {size_t{7}, size_t{64}, size_t{1000}, size_t{4} << 20}) {
    for (bool plain : {true, false}) {
      Outcome two = import_bytes(json, options(ImportThreads::kTwo, chunk, plain, strict));
      EXPECT_EQ(two.error, one.error) << "chunk " << chunk << " plain " << plain;
      if (one.error.empty() && two.error.empty()) {
        EXPECT_EQ(test::run_difference(two.run, one.run), "") << "chunk " << chunk << " plain " << plain;
      }
    }
  }
  return one.error;
}

const std::string kEvent = R"json({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1})json";

// `count` events, each a little different; `bad` replaces event `bad_at`.
std::string events(size_t count, size_t bad_at = SIZE_MAX, const std::string& bad = "") {
  std::string json = "[";
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) json += ",\n";
    json += i == bad_at ? bad
                        : fmt::format(R"json({{"ph": "X", "cat": "cpu_op", "name": "op{}", "pid": 1, "tid": {}, )json"
                                      R"json("ts": {}, "dur": 1, "args": {{"correlation": {}}}}})json",
                                      i % 7, i % 3, i, i);
  }
  return json + "]";
}

// The pieces the pipeline hands out, as "H:key=text" and "E#index=text".
std::vector<std::string> pipeline_pieces(std::string_view json, size_t chunk_size) {
  ByteStream input = ByteStream::from_memory(json, "t.json");
  TraceEventPipeline pipeline(input, chunk_size, true);
  std::vector<std::string> out;
  while (const TraceEventBatch* batch = pipeline.next()) {
    for (size_t i = 0; i < batch->size; ++i) {
      const PackedPiece& piece = batch->pieces[i];
      std::string_view text = piece.text_view();
      EXPECT_EQ(json.substr(batch->offset(piece), text.size()), text);
      EXPECT_GE(batch->padded_size(piece), text.size() + TraceEventScanner::kPadding);
      out.push_back(piece.is_event() ? "E#" + std::to_string(piece.event_index) + "=" + std::string(text)
                                     : "H:" + batch->keys[piece.event_index] + "=" + std::string(text));
    }
  }
  return out;
}

TEST(TraceEventPipeline, HandsOutThePiecesInOrderAtEveryBufferSize) {
  const std::string json = R"json({"a": 1, "s\"k": "x\\\"}]", "traceEvents": [
    {"name": "q\"}]{[", "args": {"d": [[1, 2], {"e": "\\"}]}},{"ph": "i", "ts": 3} ,
    {}], "deviceProperties": [{"id": 0}], "t": true, "n": null}  )json";
  const std::vector<std::string> expected = {
      "H:a=1",
      R"(H:s"k="x\\\"}]")",
      R"json(E#0={"name": "q\"}]{[", "args": {"d": [[1, 2], {"e": "\\"}]}})json",
      R"json(E#1={"ph": "i", "ts": 3})json",
      "E#2={}",
      R"(H:deviceProperties=[{"id": 0}])",
      "H:t=true",
      "H:n=null"};
  for (size_t chunk : {1, 2, 3, 5, 7, 16, 63, 64, 65, 100, 4096}) {
    EXPECT_EQ(pipeline_pieces(json, chunk), expected) << "chunk " << chunk;
  }
  // More pieces than one batch holds, over many buffers.
  std::string many = events(3 * TraceEventPipeline::kBatchPieces + 5);
  std::vector<std::string> got = pipeline_pieces(many, 256);
  ASSERT_EQ(got.size(), 3 * TraceEventPipeline::kBatchPieces + 5);
  EXPECT_EQ(got.back().substr(0, 7), fmt::format("E#{}=", got.size() - 1).substr(0, 7));
}

TEST(ChromeTraceTwoThreads, EveryTestTraceImportsAsOnOneThread) {
  const std::vector<std::string> traces = test::every_kineto_trace();
  SKIP_WITHOUT_KINETO_TRACES(traces.empty());
  size_t compared = 0;
  for (const std::string& name : traces) {
    stepscope::Run one = import_chrome_trace(name, options(ImportThreads::kOne));
    // The default buffer, and a small one: many buffer exchanges, events cut
    // by a buffer's end, batches cut by their size.
    for (size_t chunk : {size_t{4} << 20, size_t{4096}}) {
      stepscope::Run two = import_chrome_trace(name, options(ImportThreads::kTwo, chunk));
      EXPECT_EQ(test::run_difference(two, one), "") << name << " chunk " << chunk;
    }
    ++compared;
  }
  EXPECT_GT(compared, 20u);
}

// A plain trace file is read in place from a mapping (util/mapped_file.hpp)
// on either path; what it gives must be what the same text gives from
// memory, read through the scanner's buffers.
Outcome import_plain_file(const std::string& json, const ChromeTraceOptions& how) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / fmt::format("stepscope-plain-{}.json", ::getpid());
  std::ofstream(path, std::ios::binary) << json;
  Outcome outcome;
  try {
    outcome.run = import_chrome_trace(path.string(), how);
    outcome.run.metadata["source"] = "trace.json";
  } catch (const InputError& error) {
    outcome.error = error.what();
    if (size_t at = outcome.error.find(path.string()); at != std::string::npos) {
      outcome.error.replace(at, path.string().size(), "trace.json");
    }
  }
  std::filesystem::remove(path);
  return outcome;
}

void expect_mapped_file_as_memory(const std::string& json, const std::string& what) {
  Outcome memory = import_bytes(json, options(ImportThreads::kOne));
  for (ImportThreads threads : {ImportThreads::kOne, ImportThreads::kTwo}) {
    Outcome mapped = import_plain_file(json, options(threads));
    EXPECT_EQ(mapped.error, memory.error) << what;
    if (memory.error.empty() && mapped.error.empty()) {
      EXPECT_EQ(test::run_difference(mapped.run, memory.run), "") << what;
    }
  }
}

TEST(ChromeTraceMappedFile, EveryTestTraceImportsAsFromMemory) {
  const std::vector<std::string> traces = test::every_kineto_trace();
  SKIP_WITHOUT_KINETO_TRACES(traces.empty());
  for (const std::string& name : traces) expect_mapped_file_as_memory(read_file_bytes(name), name);
}

TEST(ChromeTraceMappedFile, ErrorsAndTheEndOfTheFileAreAsFromMemory) {
  size_t n = 3000;
  std::string json = events(n);
  expect_mapped_file_as_memory(json, "whole");
  expect_mapped_file_as_memory(json.substr(0, json.size() / 2), "truncated");
  expect_mapped_file_as_memory(json.substr(0, json.size() - 1), "no closing bracket");
  expect_mapped_file_as_memory(events(n, 2000, R"json({"ph": "X", "ts": 1,, "dur": 1})json"), "syntax");
  expect_mapped_file_as_memory(json + " x", "trailing");
  expect_mapped_file_as_memory("\xEF\xBB\xBF" + json, "byte order mark");
  // The last event's end at the very end of a page, so the reader's loads
  // past it fall in the mapping's padding.
  std::string ends_at_page = events(40);
  ends_at_page.insert(1, 4096 - ends_at_page.size() % 4096, ' ');
  ASSERT_EQ(ends_at_page.size() % 4096, 0u);
  expect_mapped_file_as_memory(ends_at_page, "ends at a page's end");
  expect_mapped_file_as_memory(ends_at_page.substr(0, ends_at_page.size() - 1), "cut at a page's end");
}

TEST(ChromeTraceTwoThreads, OddEventsAndWarningsAreTheSame) {
  // Events the plain reader declines (escapes, odd types) among plain ones,
  // so the consumer reads some itself, in order.
  const std::vector<std::string> odd = {
      R"json({"ph": "X", "name": "esc\u00e9", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": {"correlation": 1.0}})json",
      R"json({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1, "dur": -1, "args": {"bytes": -4}})json",
      R"json({"ph": "C", "name": "mem", "pid": 1, "ts": 3, "args": {"a": "x", "b": 2}})json",
      R"json({"ph": "B", "name": "r", "pid": "Spans", "tid": 2, "ts": 4})json",
      R"json({"ph": "E", "pid": 1, "tid": 9, "ts": 6})json",
      R"json({"ph": "s", "id": "0x1f", "pid": 1, "tid": 2, "ts": 1, "cat": "ac2g", "name": "ac2g"})json",
      "{\"ph\": \"X\", \"name\": \"caf\xE9\", \"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1}",
      "{\"ph\": \"X\", \"name\": \"a\tb\", \"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1}",
      R"json({"ph": "X", "cat": "mystery", "name": "m", "pid": 1, "tid": 1, "ts": 5, "dur": 1})json",
      R"json({"ph": "b", "name": "async", "pid": 1, "tid": 1, "ts": 5, "id": 3})json",
  };
  std::string json = R"json({"schemaVersion": 1, "traceEvents": [)json";
  for (size_t i = 0; i < 3000; ++i) {
    if (i > 0) json += ",\n";
    json += i % 97 == 5 ? odd[(i / 97) % odd.size()] : kEvent;
  }
  json += R"json(], "distributedInfo": {"rank": 3}, "baseTimeNanoseconds": 17})json";
  EXPECT_EQ(expect_same_on_two_threads(json), "");
  // Repairs and simdjson's reads of a read-only mapping are the same too.
  expect_mapped_file_as_memory(json, "odd events");
  std::string strict_error = expect_same_on_two_threads(json, true);
  EXPECT_NE(strict_error.find("strict import refused the trace: "), std::string::npos) << strict_error;
  stepscope::Run run = import_chrome_trace_bytes(json, "trace.json", options(ImportThreads::kTwo, 1000));
  EXPECT_EQ(run.metadata.count("distributedInfo"), 1u);
  EXPECT_NE(test::warnings_of(run).find("correlation\" or \"bytes\" args that are not non-negative integers"),
            std::string::npos) << test::warnings_of(run);
}

TEST(ChromeTraceTwoThreads, ErrorsAreTheSameWithTheirEventIndexAndOffset) {
  // Errors found by the consumer (a bad event) and by the reading thread
  // (JSON syntax, truncation), early, late, and one of each.
  const size_t n = 2500;
  EXPECT_EQ(expect_same_on_two_threads(events(n, 2000, R"json({"ph": "X", "ts": 1})json")),
            "trace.json: event #2000: is a complete event (\"X\") without \"dur\"");
  EXPECT_EQ(expect_same_on_two_threads(events(n, 3, "42")), "trace.json: event #3: is not a JSON object");
  std::string syntax = expect_same_on_two_threads(events(n, 1800, R"json({"ph": "X", "ts": 1,, "dur": 1})json"));
  EXPECT_NE(syntax.find("(in event #1800)"), std::string::npos) << syntax;
  std::string truncated = events(n);
  truncated.resize(truncated.size() - 40);
  std::string message = expect_same_on_two_threads(truncated);
  EXPECT_EQ(message, fmt::format("trace.json: invalid JSON at byte {} (end of input; truncated?) (in event #{})",
                                 truncated.size(), n - 1));
  // A bad event before a syntax error further on: the event's error wins.
  std::string both = events(n, 100, R"json({"ph": "B"})json");
  both.insert(both.size() - 300, "}");
  EXPECT_EQ(expect_same_on_two_threads(both), "trace.json: event #100: has no \"ts\"");
  std::string missing_comma = events(n);
  missing_comma[missing_comma.rfind(",\n")] = ' ';
  message = expect_same_on_two_threads(missing_comma);
  EXPECT_NE(message.find(fmt::format("expected ',' or ']' after event #{}", n - 2)), std::string::npos) << message;
  EXPECT_EQ(expect_same_on_two_threads(events(n) + " x"),
            fmt::format("trace.json: unexpected content after the trace at byte {}", events(n).size() + 1));
}

TEST(ChromeTraceTwoThreads, AnInvalidEventIsRefusedWhateverFollowsIt) {
  // simdjson once accepted this event when "}, {" followed it in the buffer
  // and refused it when other bytes did, so one thread and two disagreed
  // (found by the fuzz target).
  std::string message = expect_same_on_two_threads(R"json([{"ph": "X", "e": "cudaLaunn": 6}}, {: "aue::ev])json");
  EXPECT_NE(message.find("invalid JSON at byte 33 (in event #0)"), std::string::npos) << message;
}

TEST(ChromeTraceTwoThreads, GzipIsInflatedOnTheReadingThread) {
  std::string json = events(20000);
  std::string packed = test::gzip(json);
  stepscope::Run one = import_chrome_trace_bytes(packed, "t.json.gz", options(ImportThreads::kOne));
  stepscope::Run two = import_chrome_trace_bytes(packed, "t.json.gz", options(ImportThreads::kTwo, 4096));
  EXPECT_EQ(one.spans.size(), 20000u);
  EXPECT_EQ(test::run_difference(two, one), "");
  Outcome cut = import_bytes(packed.substr(0, packed.size() / 2), options(ImportThreads::kTwo, 4096));
  EXPECT_NE(cut.error.find("trace.json: corrupt gzip data: the data is truncated"), std::string::npos) << cut.error;
}

// A pipe hands the input over in small pieces: the reading thread must still
// fill each buffer whole before handing out pieces from it (their readers
// look past their end).
TEST(ChromeTraceTwoThreads, ReadsAPipeInSmallPieces) {
  std::string json = events(5000);
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("stepscope-pipe-{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::path fifo = dir / "trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    int fd = ::open(fifo.c_str(), O_WRONLY);
    for (size_t at = 0; fd >= 0 && at < json.size(); at += 97) {
      size_t count = std::min<size_t>(97, json.size() - at);
      if (::write(fd, json.data() + at, count) != static_cast<ssize_t>(count)) break;
    }
    if (fd >= 0) ::close(fd);
  });
  Outcome two;
  try {
    two.run = import_chrome_trace(fifo.string(), options(ImportThreads::kTwo, 4096));
  } catch (const InputError& error) {
    two.error = error.what();
  }
  writer.join();
  std::filesystem::remove_all(dir);
  ASSERT_EQ(two.error, "");
  stepscope::Run one = import_bytes(json, options(ImportThreads::kOne)).run;
  one.metadata["source"] = fifo.string();
  EXPECT_EQ(one.spans.size(), 5000u);
  EXPECT_EQ(test::run_difference(two.run, one), "");
}

TEST(ChromeTraceTwoThreads, TheReadingThreadStopsWhenTheImportFails) {
  // The consumer fails at once while the reading thread has far more to
  // read than the queue holds: the import must throw, not hang.
  std::string json = events(50000, 1, R"json({"ph": "X", "ts": 1})json");
  for (size_t chunk : {size_t{512}, size_t{4} << 20}) {
    Outcome outcome = import_bytes(json, options(ImportThreads::kTwo, chunk));
    EXPECT_EQ(outcome.error, "trace.json: event #1: is a complete event (\"X\") without \"dur\"");
  }
  // The pipeline dropped with batches still in flight.
  ByteStream input = ByteStream::from_memory(json, "t.json");
  {
    TraceEventPipeline pipeline(input, 512, true);
    ASSERT_NE(pipeline.next(), nullptr);
  }
}

}  // namespace
}  // namespace stepscope
