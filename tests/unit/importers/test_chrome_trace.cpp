// The Chrome-trace / Kineto importer: inline traces for each feature and each
// kind of bad input, then the real torch.profiler traces in ../shared.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include "chrome_trace_test_support.hpp"
#include "importers/chrome_trace.hpp"
#include "kineto_testdata.hpp"
#include "util/error.hpp"
#include "util/file_bytes.hpp"

namespace stepscope {
namespace {

Run import_text(std::string_view json) { return import_chrome_trace_bytes(json, "trace.json"); }

using test::gzip;
using test::import_error;
using test::warnings_of;

const Span& only_span(const Run& run) {
  EXPECT_EQ(run.spans.size(), 1u);
  return run.spans.at(0);
}

// --- forms and fields -------------------------------------------------------

TEST(ChromeTrace, ArrayFormCompleteEvents) {
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 10, "tid": 11, "ts": 100, "dur": 5},
    {"name": "void gemm()", "ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 102, "dur": 3}
  ])json");
  ASSERT_EQ(run.spans.size(), 2u);
  EXPECT_EQ(run.spans[0].start_ns, 100000);
  EXPECT_EQ(run.spans[0].end_ns, 105000);
  EXPECT_EQ(run.spans[0].pid, 10);
  EXPECT_EQ(run.spans[0].tid, 11);
  EXPECT_EQ(run.spans[0].kind, SpanKind::kCpuOp);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "aten::add");
  EXPECT_EQ(run.spans[1].kind, SpanKind::kKernel);
  EXPECT_NE(run.find_process(10), nullptr);
  EXPECT_NE(run.find_thread(0, 7), nullptr);
  EXPECT_EQ(run.metadata.at("clock"), "trace");
  EXPECT_EQ(run.metadata.at("source"), "trace.json");
  EXPECT_EQ(run.metadata.at("source_format"), "chrome_trace");
  EXPECT_EQ(warnings_of(run), "");
}

// The analyses read a Run and cannot intern; the importer names the group
// every ProfilerStep#N belongs to, and only when there are steps.
TEST(ChromeTrace, ProfilerStepsGetTheirGroupNameInterned) {
  stepscope::Run steps = import_text(R"json([
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
  ])json");
  EXPECT_TRUE(steps.strings.find("ProfilerStep*").has_value());
  stepscope::Run no_steps = import_text(R"json([
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
  ])json");
  EXPECT_FALSE(no_steps.strings.find("ProfilerStep*").has_value());
}

TEST(ChromeTrace, ObjectFormKeepsHeaderAsMetadata) {
  stepscope::Run run = import_text(R"json({
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "GPU \"0\""}],
    "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}],
    "distributedInfo": {"rank": 3, "world_size": 8},
    "displayTimeUnit": "ms",
    "baseTimeNanoseconds": 1727743122000000000,
    "record_shapes": true,
    "INFO": ["a log line"]
  })json");
  EXPECT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.metadata.at("schemaVersion"), "1");
  EXPECT_EQ(run.metadata.at("displayTimeUnit"), "ms");
  EXPECT_EQ(run.metadata.at("baseTimeNanoseconds"), "1727743122000000000");
  EXPECT_EQ(run.metadata.at("record_shapes"), "true");
  EXPECT_EQ(run.metadata.at("deviceProperties"), R"json([{"id": 0, "name": "GPU \"0\""}])json");
  EXPECT_EQ(run.metadata.at("distributedInfo"), R"json({"rank": 3, "world_size": 8})json");
  EXPECT_EQ(run.metadata.count("INFO"), 0u);
}

TEST(ChromeTrace, TimestampsAreConvertedExactlyFromDecimalText) {
  // 1712195495519695.8 us is not representable as a double to the ns.
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1712195495519695.8, "dur": 0.25},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1.0005, "dur": 0.0004},
    {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 1.5e3, "dur": 2E0},
    {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": -2.5, "dur": 1}
  ])json");
  ASSERT_EQ(run.spans.size(), 4u);
  EXPECT_EQ(run.spans[0].start_ns, 1712195495519695800);
  EXPECT_EQ(run.spans[0].end_ns, 1712195495519696050);
  EXPECT_EQ(run.spans[1].start_ns, 1001);  // half rounds away from zero
  EXPECT_EQ(run.spans[1].end_ns, 1001);
  EXPECT_EQ(run.spans[2].start_ns, 1500000);
  EXPECT_EQ(run.spans[2].end_ns, 1502000);
  EXPECT_EQ(run.spans[3].start_ns, -2500);
}

TEST(ChromeTrace, StringPidAndTidGetStableSyntheticIdsAndNames) {
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 9},
    {"ph": "X", "name": "second", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 2, "dur": 1},
    {"ph": "X", "name": "stream", "pid": 0, "tid": "Stream 7", "ts": 2, "dur": 1},
    {"ph": "X", "name": "sync", "pid": 0, "tid": -1, "ts": 2, "dur": 1}
  ])json");
  ASSERT_EQ(run.spans.size(), 4u);
  EXPECT_EQ(run.spans[0].pid, run.spans[1].pid);
  EXPECT_EQ(run.spans[0].tid, run.spans[1].tid);
  EXPECT_LE(run.spans[0].pid, kSyntheticIdBase);
  EXPECT_LE(run.spans[0].tid, kSyntheticIdBase);
  EXPECT_NE(run.spans[0].pid, run.spans[0].tid);
  EXPECT_EQ(run.spans[3].tid, -1);  // a real negative tid is kept as is
  const Process* spans_process = run.find_process(run.spans[0].pid);
  ASSERT_NE(spans_process, nullptr);
  EXPECT_EQ(run.strings.get(spans_process->command), "Spans");
  const Thread* thread = run.find_thread(run.spans[0].pid, run.spans[0].tid);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(run.strings.get(thread->name), "PyTorch Profiler");
  const Thread* stream = run.find_thread(0, run.spans[2].tid);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(run.strings.get(stream->name), "Stream 7");
}

TEST(ChromeTrace, BeginEndPairsBecomeSpansPerThread) {
  stepscope::Run run = import_text(R"json([
    {"ph": "B", "name": "outer", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "B", "name": "other thread", "pid": 1, "tid": 2, "ts": 11},
    {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 13},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 21},
    {"ph": "E", "pid": 1, "tid": 3, "ts": 22}
  ])json");
  ASSERT_EQ(run.spans.size(), 3u);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "inner");
  EXPECT_EQ(run.spans[0].start_ns, 12000);
  EXPECT_EQ(run.spans[0].end_ns, 13000);
  EXPECT_EQ(run.strings.get(run.spans[1].name), "outer");
  EXPECT_EQ(run.spans[1].kind, SpanKind::kUserRange);
  EXPECT_EQ(run.spans[1].end_ns, 20000);
  EXPECT_EQ(run.spans[2].tid, 2);
  EXPECT_EQ(run.spans[2].end_ns, 21000);
  EXPECT_NE(warnings_of(run).find("1 \"E\" events without a matching \"B\""), std::string::npos);
}

TEST(ChromeTrace, UnclosedBeginIsClosedAtTheLastTimestamp) {
  stepscope::Run run = import_text(R"json([
    {"ph": "B", "name": "never ends", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "X", "name": "late", "pid": 1, "tid": 2, "ts": 30, "dur": 5}
  ])json");
  ASSERT_EQ(run.spans.size(), 2u);
  EXPECT_EQ(run.strings.get(run.spans[1].name), "never ends");
  EXPECT_EQ(run.spans[1].end_ns, 35000);
  EXPECT_NE(warnings_of(run).find("1 \"B\" events without \"E\""), std::string::npos);
}

TEST(ChromeTrace, CountersBecomeOneTrackPerPidNameAndArg) {
  stepscope::Run run = import_text(R"json([
    {"ph": "C", "name": "memory", "pid": 5, "ts": 1, "args": {"allocated": 10, "reserved": 20.5}},
    {"args": {"allocated": 12, "note": "text"}, "ph": "C", "name": "memory", "pid": 5, "ts": 2},
    {"ph": "C", "name": "memory", "pid": 6, "ts": 3, "args": {"allocated": 1}}
  ])json");
  ASSERT_EQ(run.counter_tracks.size(), 3u);
  EXPECT_EQ(run.strings.get(run.counter_tracks[0].name), "memory.allocated");
  EXPECT_EQ(run.counter_tracks[0].pid, 5);
  EXPECT_EQ(run.strings.get(run.counter_tracks[1].name), "memory.reserved");
  EXPECT_EQ(run.counter_tracks[2].pid, 6);
  ASSERT_EQ(run.counter_values.size(), 4u);
  EXPECT_EQ(run.counter_values[1].track, 1u);
  EXPECT_DOUBLE_EQ(run.counter_values[1].value, 20.5);
  EXPECT_EQ(run.counter_values[2].track, 0u);  // args before "ph" still count
  EXPECT_EQ(run.counter_values[2].ts_ns, 2000);
  EXPECT_DOUBLE_EQ(run.counter_values[2].value, 12);
  EXPECT_NE(warnings_of(run).find("1 non-numeric counter args ignored"), std::string::npos);
}

TEST(ChromeTrace, MetadataEventsNameProcessesAndThreads) {
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "name": "op", "pid": 42, "tid": 43, "ts": 1, "dur": 1},
    {"name": "process_name", "ph": "M", "pid": 42, "tid": 0, "args": {"name": "python3.10"}},
    {"name": "thread_name", "ph": "M", "pid": 42, "tid": 43, "args": {"name": "thread 43 (python)"}},
    {"args": {"name": "stream 7"}, "name": "thread_name", "ph": "M", "pid": 0, "tid": 7},
    {"name": "process_sort_index", "ph": "M", "pid": 99, "args": {"sort_index": 5}}
  ])json");
  const Process* process = run.find_process(42);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(run.strings.get(process->command), "python3.10");
  EXPECT_EQ(run.strings.get(run.find_thread(42, 43)->name), "thread 43 (python)");
  ASSERT_NE(run.find_thread(0, 7), nullptr);
  EXPECT_EQ(run.strings.get(run.find_thread(0, 7)->name), "stream 7");
  EXPECT_NE(run.find_process(99), nullptr);
  EXPECT_EQ(run.spans.size(), 1u);
}

TEST(ChromeTrace, InstantsAreCountedAndUnknownPhasesReported) {
  stepscope::Run run = import_text(R"json([
    {"ph": "i", "name": "a", "s": "g", "pid": "", "tid": "", "ts": 1},
    {"ph": "I", "name": "b", "pid": 1, "tid": 1, "ts": 2},
    {"ph": "b", "name": "async", "id": 1, "pid": 1, "tid": 1, "ts": 3}
  ])json");
  EXPECT_TRUE(run.spans.empty());
  EXPECT_EQ(run.metadata.at("instant_events"), "2");
  EXPECT_NE(warnings_of(run).find("1 events of unsupported phase \"b\" skipped"), std::string::npos);
}

// --- flows ------------------------------------------------------------------

// A launch's flow to its kernels, a flow of another kind with the same id,
// and an end on no slice.
constexpr std::string_view kFlowsTrace = R"json([
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 10},
    {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 110, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 200, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 200, "dur": 30},
    {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 240, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "X", "cat": "kernel", "name": "gemm2", "pid": 0, "tid": 7, "ts": 240, "dur": 5},
    {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 242, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 500, "cat": "ac2g", "name": "ac2g", "bp": "e"}
  ])json";

TEST(ChromeTrace, FlowsBindToEnclosingSlices) {
  stepscope::Run run = import_text(kFlowsTrace);
  ASSERT_EQ(run.flows.size(), 2u);
  for (const Flow& flow : run.flows) {
    EXPECT_EQ(run.strings.get(run.spans[flow.from].name), "cudaLaunchKernel");
    EXPECT_EQ(run.strings.get(flow.kind), "ac2g");
  }
  EXPECT_EQ(run.strings.get(run.spans[run.flows[0].to].name), "gemm");
  EXPECT_EQ(run.strings.get(run.spans[run.flows[1].to].name), "gemm2");
  // fwdbwd id 7 is a different flow (no start); id 9 is on no slice.
  EXPECT_NE(warnings_of(run).find("1 flow events not on any slice"), std::string::npos);
  EXPECT_NE(warnings_of(run).find("1 flow events without a partner"), std::string::npos);
}

// For callers that read no flows: the same Run without them, and nothing
// looked for that only binding finds; flow events are still checked.
TEST(ChromeTrace, WithoutFlowsTheRunIsTheSameLessItsFlows) {
  stepscope::Run with = import_text(kFlowsTrace);
  stepscope::Run without = import_chrome_trace_bytes(kFlowsTrace, "trace.json", {.flows = false});
  EXPECT_TRUE(without.flows.empty());
  EXPECT_EQ(warnings_of(without), "");
  ASSERT_EQ(without.spans.size(), with.spans.size());
  for (size_t i = 0; i < with.spans.size(); ++i) {
    EXPECT_EQ(without.spans[i].start_ns, with.spans[i].start_ns);
    EXPECT_EQ(without.spans[i].end_ns, with.spans[i].end_ns);
    EXPECT_EQ(without.strings.get(without.spans[i].name), with.strings.get(with.spans[i].name));
  }
  EXPECT_EQ(without.threads.size(), with.threads.size());
  EXPECT_NE(import_error(R"json([{"ph": "s", "pid": 1, "tid": 1, "ts": 5, "cat": "ac2g"}])json", {.flows = false})
                .find("without \"id\""),
            std::string::npos);
}

TEST(ChromeTrace, FlowEndWithoutBindingPointTakesTheNextSlice) {
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "name": "producer", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "s", "id": "0x1", "pid": 1, "tid": 1, "ts": 5, "cat": "queue"},
    {"ph": "f", "id": "0x1", "pid": 1, "tid": 2, "ts": 20, "cat": "queue"},
    {"ph": "X", "name": "consumer", "pid": 1, "tid": 2, "ts": 25, "dur": 10}
  ])json");
  ASSERT_EQ(run.flows.size(), 1u);
  EXPECT_EQ(run.strings.get(run.spans[run.flows[0].from].name), "producer");
  EXPECT_EQ(run.strings.get(run.spans[run.flows[0].to].name), "consumer");
}

// --- hostile and broken input -----------------------------------------------

TEST(ChromeTrace, HostileNamesAreKeptAsBytes) {
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "name": "say \"hi\" <script>alert(1)</script>", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
    {"ph": "X", "name": "\u00ff\u0000end", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
    {"ph": "X", "name": "lone \ud800 surrogate", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
    {"ph": "X", "name": "\udc00 \ud83d\ude00\n\"\/", "pid": 1, "tid": 1, "ts": 4, "dur": 1}
  ])json");
  ASSERT_EQ(run.spans.size(), 4u);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "say \"hi\" <script>alert(1)</script>");
  EXPECT_EQ(run.strings.get(run.spans[1].name), std::string("\xC3\xBF\0end", 6));
  EXPECT_EQ(run.strings.get(run.spans[2].name), "lone \xEF\xBF\xBD surrogate");
  EXPECT_EQ(run.strings.get(run.spans[3].name), "\xEF\xBF\xBD \xF0\x9F\x98\x80\n\"/");
  EXPECT_NE(warnings_of(run).find("2 strings with lone surrogate escapes"), std::string::npos);
}

TEST(ChromeTrace, InvalidUtf8BytesAreReplacedWithAWarning) {
  stepscope::Run run = import_text("[{\"ph\": \"X\", \"name\": \"caf\xE9\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]");
  ASSERT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "caf\xEF\xBF\xBD");
  EXPECT_NE(warnings_of(run).find("not valid UTF-8"), std::string::npos);
}

TEST(ChromeTrace, NegativeDurationIsClampedWithAWarning) {
  stepscope::Run run = import_text(R"json([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": -1}])json");
  EXPECT_EQ(only_span(run).end_ns, 5000);
  EXPECT_NE(warnings_of(run).find("negative \"dur\""), std::string::npos);
}

TEST(ChromeTrace, MalformedEventsNameTheEventIndex) {
  const std::string good = R"json({"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1})json";
  auto error_for = [&](const std::string& bad) { return import_error("[" + good + ", " + good + ", " + bad + "]"); };
  EXPECT_EQ(error_for("42"), "trace.json: event #2: is not a JSON object");
  EXPECT_EQ(error_for(R"json({"name": "x", "ts": 1})json"), "trace.json: event #2: has no \"ph\" (phase)");
  EXPECT_EQ(error_for(R"json({"ph": "X", "ts": "12", "dur": 1})json"), "trace.json: event #2: \"ts\" is not a number");
  EXPECT_EQ(error_for(R"json({"ph": "X", "ts": 1, "dur": true})json"), "trace.json: event #2: \"dur\" is not a number");
  EXPECT_EQ(error_for(R"json({"ph": "X", "ts": 1})json"),
            "trace.json: event #2: is a complete event (\"X\") without \"dur\"");
  EXPECT_EQ(error_for(R"json({"ph": "B", "pid": 1})json"), "trace.json: event #2: has no \"ts\"");
  EXPECT_EQ(error_for(R"json({"ph": "X", "pid": 1.5, "ts": 1, "dur": 1})json"),
            "trace.json: event #2: \"pid\" is neither an integer nor a string");
  EXPECT_EQ(error_for(R"json({"ph": "X", "tid": [1], "ts": 1, "dur": 1})json"),
            "trace.json: event #2: \"tid\" is neither an integer nor a string");
  EXPECT_EQ(error_for(R"json({"ph": 88, "ts": 1})json"), "trace.json: event #2: \"ph\" is not a string");
  EXPECT_EQ(error_for(R"json({"ph": "X", "name": "bad \q escape", "ts": 1, "dur": 1})json"),
            "trace.json: event #2: \"name\" is not a valid JSON string");
  EXPECT_EQ(error_for(R"json({"ph": "X", "ts": 1e300, "dur": 1})json"), "trace.json: event #2: \"ts\" is out of range");
  EXPECT_EQ(error_for(R"json({"ph": "s", "ts": 1, "cat": "ac2g"})json"), "trace.json: event #2: is a flow event without \"id\"");
  EXPECT_EQ(error_for(R"json({"ph": "C", "name": "c", "ts": 1, "args": 3})json"), "trace.json: event #2: \"args\" is not an object");
}

TEST(ChromeTrace, BrokenJsonNamesTheByteOffset) {
  std::string truncated = R"json([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, {"ph": "X", "na)json";
  std::string message = import_error(truncated);
  EXPECT_NE(message.find("trace.json: invalid JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("at byte 81 (end of input; truncated?)"), std::string::npos) << message;

  message = import_error(R"json([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1} {"ph": "X"}])json");
  EXPECT_NE(message.find("invalid JSON at byte"), std::string::npos) << message;
  EXPECT_NE(message.find("event #"), std::string::npos) << message;

  EXPECT_NE(import_error("").find("trace.json: "), std::string::npos);
  EXPECT_NE(import_error("[1, 2").find("trace.json: "), std::string::npos);
  EXPECT_NE(import_error("[] trailing").find("trace.json: "), std::string::npos);
}

TEST(ChromeTrace, WrongTopLevelShapesAreRejected) {
  EXPECT_EQ(import_error("42"),
            "trace.json: the trace is neither a JSON array of events nor an object with \"traceEvents\"");
  EXPECT_EQ(import_error(R"json({"schemaVersion": 1})json"), "trace.json: the trace object has no \"traceEvents\" array");
  EXPECT_EQ(import_error(R"json({"traceEvents": {}})json"), "trace.json: \"traceEvents\" is not an array");
  EXPECT_EQ(import_error("[]"), "");
}

TEST(ChromeTrace, CategoryMapping) {
  EXPECT_EQ(chrome_category_kind("cpu_op"), SpanKind::kCpuOp);
  EXPECT_EQ(chrome_category_kind("Operator"), SpanKind::kCpuOp);
  EXPECT_EQ(chrome_category_kind("user_annotation"), SpanKind::kUserRange);
  EXPECT_EQ(chrome_category_kind("gpu_user_annotation"), SpanKind::kDeviceAnnotation);
  EXPECT_EQ(chrome_category_kind("python_function"), SpanKind::kPythonFunction);
  EXPECT_EQ(chrome_category_kind("cuda_sync"), SpanKind::kSync);
  EXPECT_EQ(chrome_category_kind("cuda_runtime"), SpanKind::kRuntimeCall);
  EXPECT_EQ(chrome_category_kind("cuda_driver"), SpanKind::kRuntimeCall);
  EXPECT_EQ(chrome_category_kind("mtia_runtime"), SpanKind::kRuntimeCall);
  EXPECT_EQ(chrome_category_kind("Runtime"), SpanKind::kRuntimeCall);
  EXPECT_EQ(chrome_category_kind("kernel"), SpanKind::kKernel);
  EXPECT_EQ(chrome_category_kind("Kernel"), SpanKind::kKernel);
  EXPECT_EQ(chrome_category_kind("mtia_ccp_events"), SpanKind::kKernel);
  EXPECT_EQ(chrome_category_kind("gpu_memcpy"), SpanKind::kMemcpy);
  EXPECT_EQ(chrome_category_kind("gpu_memset"), SpanKind::kMemset);
  EXPECT_EQ(chrome_category_kind("Trace"), SpanKind::kOther);
  EXPECT_EQ(chrome_category_kind("", "CPU functions"), SpanKind::kCpuOp);
  EXPECT_EQ(chrome_category_kind("", "CUDA functions"), SpanKind::kKernel);
  EXPECT_EQ(chrome_category_kind("", "Spans"), SpanKind::kOther);
}

TEST(ChromeTrace, LegacyAutogradProfilerTrace) {
  stepscope::Run run = import_text(R"json([{"name": "aten::add", "ph": "X", "ts": 86.114, "dur": 13.084, "tid": 0, "pid": "CPU functions", "args": {}}])json");
  EXPECT_EQ(only_span(run).kind, SpanKind::kCpuOp);
  EXPECT_EQ(only_span(run).start_ns, 86114);
  EXPECT_EQ(only_span(run).end_ns, 99198);
}

TEST(ChromeTrace, SpanArgsCarryCorrelationBytesAndShapes) {
  stepscope::Run run = import_text(R"json([
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 9,
     "args": {"Input Dims": [[2, 3], [3, 4]], "External id": 7}},
    {"args": {"correlation": 42, "External id": 7}, "ph": "X", "cat": "cuda_runtime",
     "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 3, "dur": 1,
     "args": {"correlation": 43, "bytes": 4096}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1,
     "args": {"correlation": "oops", "bytes": -1}}
  ])json");
  ASSERT_EQ(run.spans.size(), 4u);
  EXPECT_EQ(run.strings.get(run.spans[0].detail), "[[2, 3], [3, 4]]");
  EXPECT_EQ(run.spans[0].correlation, 0);
  EXPECT_EQ(run.spans[1].correlation, 42);  // args before "ph" are read too
  EXPECT_EQ(run.spans[2].correlation, 43);
  EXPECT_EQ(run.spans[2].bytes, 4096);
  EXPECT_EQ(run.spans[3].correlation, 0);
  EXPECT_EQ(run.spans[3].bytes, 0);
  EXPECT_NE(warnings_of(run).find("2 \"correlation\" or \"bytes\" args"), std::string::npos) << warnings_of(run);
}

// --- files and gzip ---------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "stepscope-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path file(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(FileBytes, ReadsPlainAndGzipFilesWithPadding) {
  TempDir dir;
  std::string text(100000, 'x');
  write_file(dir.file("plain.txt"), text);
  write_file(dir.file("packed.gz"), gzip(text));
  std::string plain = read_file_bytes(dir.file("plain.txt").string());
  std::string packed = read_file_bytes(dir.file("packed.gz").string());
  EXPECT_EQ(plain, text);
  EXPECT_EQ(packed, text);
  EXPECT_GE(plain.capacity(), plain.size() + kFileBytesPadding);
  EXPECT_GE(packed.capacity(), packed.size() + kFileBytesPadding);
}

TEST(FileBytes, InflatesConcatenatedGzipMembers) {
  TempDir dir;
  write_file(dir.file("two.gz"), gzip("[{\"ph\": \"X\", ") + gzip(R"json("name": "a", "ts": 1, "dur": 2}])json"));
  EXPECT_EQ(read_file_bytes(dir.file("two.gz").string()), R"json([{"ph": "X", "name": "a", "ts": 1, "dur": 2}])json");
  stepscope::Run run = import_chrome_trace(dir.file("two.gz").string());
  EXPECT_EQ(run.spans.size(), 1u);
}

TEST(FileBytes, InflatesAMemberThatStartsPastTheDecodersInputBuffer) {
  // The first member's compressed bytes outrun the decoder's 1 MB input
  // buffer, so the second starts in a later refill, after bytes the inflater
  // may have read ahead of the first one's trailer.
  std::mt19937 random(7);
  std::string first(size_t{3} << 20, '\0');
  for (char& c : first) c = static_cast<char>(random());
  std::string second = "and the second member";
  TempDir dir;
  write_file(dir.file("two.gz"), gzip(first) + gzip(second));
  EXPECT_TRUE(read_file_bytes(dir.file("two.gz").string()) == first + second);
}

TEST(FileBytes, ReportsMissingAndCorruptFiles) {
  TempDir dir;
  std::string missing = dir.file("missing.json").string();
  try {
    read_file_bytes(missing);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "cannot read " + missing + ": No such file or directory");
  }
  std::string packed = gzip(std::string(5000, 'y'));
  write_file(dir.file("truncated.gz"), packed.substr(0, packed.size() / 2));
  std::string corrupt = packed;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  write_file(dir.file("corrupt.gz"), corrupt);
  write_file(dir.file("garbage-after.gz"), packed + "junk");
  // The trailer's CRC-32 and length are checked.
  for (size_t from_end : {8, 1}) {
    std::string bad = packed;
    bad[bad.size() - from_end] = static_cast<char>(bad[bad.size() - from_end] ^ 0x01);
    write_file(dir.file(from_end == 8 ? "bad-crc.gz" : "bad-length.gz"), bad);
  }
  for (const char* name : {"truncated.gz", "corrupt.gz", "garbage-after.gz", "bad-crc.gz", "bad-length.gz"}) {
    std::string path = dir.file(name).string();
    try {
      read_file_bytes(path);
      ADD_FAILURE() << name << " read without error";
    } catch (const InputError& error) {
      EXPECT_EQ(std::string(error.what()).rfind(path + ": corrupt gzip data: ", 0), 0u) << error.what();
      if (std::string(name).rfind("bad-", 0) == 0) {
        EXPECT_NE(std::string(error.what()).find("incorrect checksum or length"), std::string::npos) << error.what();
      }
    }
  }
  EXPECT_THROW(read_file_bytes(dir.file("").string()), InputError);  // a directory
}

// --- real torch.profiler traces ---------------------------------------------

size_t count_spans_of(const Run& run, SpanKind kind) {
  return static_cast<size_t>(std::count_if(run.spans.begin(), run.spans.end(), [&](const Span& s) { return s.kind == kind; }));
}

size_t count_occurrences(std::string_view text, std::string_view needle) {
  size_t count = 0;
  for (size_t pos = text.find(needle); pos != std::string_view::npos; pos = text.find(needle, pos + 1)) ++count;
  return count;
}

TEST(ChromeTraceRealFiles, NanosecondResolutionCudaTrace) {
  std::filesystem::path path = test::kineto_trace("ns_resolution_trace");
  SKIP_WITHOUT_KINETO_TRACES(path.empty());
  stepscope::Run run = import_chrome_trace(path.string());
  // Cross-check against a count that does not parse JSON at all.
  size_t complete_events = count_occurrences(read_file_bytes(path.string()), "\"ph\": \"X\"");
  EXPECT_EQ(run.spans.size(), complete_events);
  EXPECT_GT(count_spans_of(run, SpanKind::kKernel), 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kCpuOp), 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kRuntimeCall), 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kMemcpy), 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kMemset), 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kUserRange), 0u);
  ASSERT_FALSE(run.flows.empty());
  size_t launches_to_kernels = 0;
  for (const Flow& flow : run.flows) {
    if (run.strings.get(flow.kind) != "ac2g") continue;
    EXPECT_EQ(run.spans[flow.from].kind, SpanKind::kRuntimeCall);
    if (run.spans[flow.to].kind == SpanKind::kKernel) ++launches_to_kernels;
    // The flow (from "s"/"f" ids) and the args' correlation agree.
    EXPECT_NE(run.spans[flow.from].correlation, 0);
    EXPECT_EQ(run.spans[flow.from].correlation, run.spans[flow.to].correlation);
  }
  EXPECT_GT(launches_to_kernels, 0u);
  for (const Span& span : run.spans) {
    if (span.kind == SpanKind::kMemcpy) {
      EXPECT_GT(span.bytes, 0);
    }
  }
  EXPECT_EQ(run.metadata.at("displayTimeUnit"), "ns");
  EXPECT_NE(run.metadata.at("distributedInfo").find("\"rank\""), std::string::npos);
  // Sub-microsecond digits survive: some span starts are not whole microseconds.
  EXPECT_TRUE(std::any_of(run.spans.begin(), run.spans.end(), [](const Span& s) { return s.start_ns % 1000 != 0; }));
}

TEST(ChromeTraceRealFiles, MtiaDeviceEventsAreKernels) {
  std::filesystem::path path = test::kineto_trace("mtia_trace_single_rank");
  SKIP_WITHOUT_KINETO_TRACES(path.empty());
  stepscope::Run run = import_chrome_trace(path.string());
  size_t device_spans = 0;
  for (const Span& span : run.spans) {
    if (span.pid == 9) {  // the "MTIA 9" device process
      EXPECT_EQ(span.kind, SpanKind::kKernel);
      ++device_spans;
    }
  }
  EXPECT_GT(device_spans, 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kRuntimeCall), 0u);
  ASSERT_NE(run.find_process(9), nullptr);
  EXPECT_EQ(run.strings.get(run.find_process(9)->command), "MTIA 9");
}

TEST(ChromeTraceRealFiles, RocmTraceHasHipRuntimeCallsAndKernels) {
  std::filesystem::path path = test::kineto_trace("amd_trace");
  SKIP_WITHOUT_KINETO_TRACES(path.empty());
  stepscope::Run run = import_chrome_trace(path.string());
  size_t hip_calls = 0;
  for (const Span& span : run.spans) {
    if (span.kind == SpanKind::kRuntimeCall && run.strings.get(span.name).starts_with("hip")) ++hip_calls;
  }
  EXPECT_GT(hip_calls, 0u);
  EXPECT_GT(count_spans_of(run, SpanKind::kKernel), 0u);
  EXPECT_FALSE(run.flows.empty());
}

TEST(ChromeTraceRealFiles, EveryTestTraceImports) {
  const std::vector<std::string> traces = test::every_kineto_trace();
  SKIP_WITHOUT_KINETO_TRACES(traces.empty());
  size_t imported = 0;
  for (const std::string& name : traces) {
    stepscope::Run run = import_chrome_trace(name);
    EXPECT_FALSE(run.spans.empty()) << name;
    ++imported;
  }
  EXPECT_GT(imported, 20u);
}

}  // namespace
}  // namespace stepscope
