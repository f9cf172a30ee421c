// The Perfetto export read back by stepscope's own Chrome-trace importer.
#include "renderers/export/perfetto.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "importers/chrome_trace.hpp"
#include "renderers/escape.hpp"
#include "run_fixtures.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

using fixtures::kSamplePeriodNs;
using SpanTuple = std::tuple<int64_t, int64_t, std::string, int64_t, int64_t>;  // pid, tid, name, start, end

std::string export_text(const Run& run, const PerfettoOptions& options = {}) {
  std::ostringstream out;
  write_perfetto(run, out, options);
  return out.str();
}

Run round_trip(const Run& run, const PerfettoOptions& options = {}) {
  return import_chrome_trace_bytes(export_text(run, options), "perfetto.json");
}

std::vector<SpanTuple> spans_of(const Run& run, int64_t pid, int64_t tid) {
  std::vector<SpanTuple> out;
  for (const Span& s : run.spans) {
    if (s.pid == pid && s.tid == tid) out.emplace_back(s.pid, s.tid, std::string(run.strings.get(s.name)), s.start_ns, s.end_ns);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string thread_name(const Run& run, int64_t pid, int64_t tid) {
  const Thread* t = run.find_thread(pid, tid);
  return t ? std::string(run.strings.get(t->name)) : "";
}

TEST(Perfetto, ConsecutiveSamplesWithSharedFramesBecomeNestedSlices) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(kSamplePeriodNs);
  run.add_process(1, "python");
  run.add_thread(1, 1, "MainThread");
  FrameId a = run.intern_frame("a", "f.py", 1);
  FrameId b = run.intern_frame("b", "f.py", 2);
  FrameId c = run.intern_frame("c", "f.py", 3);
  const int64_t p = kSamplePeriodNs;
  // Out of time order on purpose; an idle sample that is left out; a gap.
  run.samples.push_back({2 * p, 1, 1, run.stacks.intern({a, c}), ThreadState::kRunning});
  run.samples.push_back({0, 1, 1, run.stacks.intern({a, b}), ThreadState::kRunning});
  run.samples.push_back({p, 1, 1, run.stacks.intern({a, b}), ThreadState::kRunning});
  run.samples.push_back({5 * p, 1, 1, run.stacks.intern({b}), ThreadState::kIdle});
  run.samples.push_back({10 * p, 1, 1, run.stacks.intern({a}), ThreadState::kRunning});

  stepscope::Run back = round_trip(run);
  std::vector<SpanTuple> want = {
      {1, 1, "a (f.py:1)", 0, 3 * p},       {1, 1, "b (f.py:2)", 0, 2 * p},
      {1, 1, "c (f.py:3)", 2 * p, 3 * p},   {1, 1, "a (f.py:1)", 10 * p, 11 * p},
  };
  std::sort(want.begin(), want.end());
  EXPECT_EQ(spans_of(back, 1, 1), want);
  EXPECT_EQ(thread_name(back, 1, 1), "MainThread");

  // With idle samples, the idle one closes a's slice and opens b's.
  stepscope::Run with_idle = round_trip(run, {.include_idle = true});
  std::vector<SpanTuple> spans = spans_of(with_idle, 1, 1);
  EXPECT_NE(std::find(spans.begin(), spans.end(), SpanTuple{1, 1, "b (f.py:2)", 5 * p, 6 * p}), spans.end());
}

TEST(Perfetto, SpansKeepTimesNamesAndKinetoKindsOnTraceRuns) {
  stepscope::Run run = fixtures::span_run();
  stepscope::Run back = round_trip(run);
  ASSERT_EQ(back.spans.size(), run.spans.size());
  for (size_t i = 0; i < run.spans.size(); ++i) {
    const Span& want = run.spans[i];
    auto match = std::find_if(back.spans.begin(), back.spans.end(), [&](const Span& got) {
      return got.start_ns == want.start_ns && got.end_ns == want.end_ns && got.pid == want.pid && got.tid == want.tid &&
             back.strings.get(got.name) == printable_utf8(run.strings.get(want.name));
    });
    ASSERT_NE(match, back.spans.end()) << "span " << i << " lost";
    // Kinds Kineto has come back as themselves; stepscope's own read as other.
    const std::vector<SpanKind> kineto_kinds = {SpanKind::kCpuOp,  SpanKind::kUserRange,      SpanKind::kRuntimeCall,
                                                SpanKind::kKernel, SpanKind::kMemcpy,         SpanKind::kMemset,
                                                SpanKind::kSync,   SpanKind::kPythonFunction, SpanKind::kDeviceAnnotation};
    bool kineto_kind = std::find(kineto_kinds.begin(), kineto_kinds.end(), want.kind) != kineto_kinds.end();
    EXPECT_EQ(match->kind, kineto_kind ? want.kind : SpanKind::kOther) << "span " << i;
  }
  EXPECT_EQ(thread_name(back, 10, 11), printable_utf8(fixtures::kScriptName));
}

TEST(Perfetto, SpansOfSampledThreadsGoToCompanionTracks) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(kSamplePeriodNs);
  run.add_process(5, "python");
  run.add_thread(5, 6, "MainThread");
  FrameId a = run.intern_frame("a", "f.py", 1);
  run.samples.push_back({0, 5, 6, run.stacks.intern({a}), ThreadState::kRunning});
  run.spans.push_back({0, 100, 5, 6, SpanKind::kStep, run.strings.intern("step")});
  run.spans.push_back({10, 50, 5, 6, SpanKind::kForward, run.strings.intern("forward")});
  run.spans.push_back({60, 70, 5, 6, SpanKind::kUserRange, run.strings.intern("range")});

  stepscope::Run back = round_trip(run);
  EXPECT_EQ(spans_of(back, 5, 6).size(), 1u);  // the sample slice alone
  EXPECT_EQ(spans_of(back, 5, 6 + kPerfettoLaneStride), (std::vector<SpanTuple>{{5, 6 + kPerfettoLaneStride, "step", 0, 100}}));
  EXPECT_EQ(spans_of(back, 5, 6 + 2 * kPerfettoLaneStride),
            (std::vector<SpanTuple>{{5, 6 + 2 * kPerfettoLaneStride, "forward", 10, 50}}));
  EXPECT_EQ(spans_of(back, 5, 6 + 3 * kPerfettoLaneStride).size(), 1u);
  EXPECT_EQ(thread_name(back, 5, 6 + kPerfettoLaneStride), "thread 6 \"MainThread\" steps");
}

TEST(Perfetto, CountersAndFlowsRoundTrip) {
  stepscope::Run run;
  run.add_process(3, "train");
  run.add_thread(3, 3, "main");
  run.add_thread(3, 7, "stream 7");
  run.spans.push_back({1000, 9000, 3, 3, SpanKind::kCpuOp, run.strings.intern("aten::mm")});
  run.spans.push_back({2000, 3000, 3, 3, SpanKind::kRuntimeCall, run.strings.intern("cudaLaunchKernel")});
  run.spans.push_back({5000, 8000, 3, 7, SpanKind::kKernel, run.strings.intern("gemm")});
  run.spans[1].correlation = 42;
  run.spans[0].detail = run.strings.intern("[[2, 3], []]");
  run.spans.push_back({8000, 8500, 3, 7, SpanKind::kMemcpy, run.strings.intern("Memcpy HtoD")});
  run.spans[3].bytes = 4096;
  run.spans[3].detail = run.strings.intern("not JSON <x>");
  run.flows.push_back({1, 2, run.strings.intern("ac2g")});
  run.counter_tracks.push_back({run.strings.intern("cpu.total.percent"), 0, run.strings.intern("percent")});
  run.counter_tracks.push_back({run.strings.intern("load"), 3, run.strings.intern("load")});
  run.counter_values.push_back({0, 1000, 12.5});
  run.counter_values.push_back({0, 2001, 99.25});
  run.counter_values.push_back({1, 1500, 3.0});

  stepscope::Run back = round_trip(run);
  ASSERT_EQ(back.flows.size(), 1u);
  const Span& from = back.spans.at(back.flows[0].from);
  const Span& to = back.spans.at(back.flows[0].to);
  EXPECT_EQ(back.strings.get(from.name), "cudaLaunchKernel");
  EXPECT_EQ(back.strings.get(to.name), "gemm");
  EXPECT_EQ(back.strings.get(back.flows[0].kind), "ac2g");

  ASSERT_EQ(back.spans.size(), 4u);
  for (const Span& got : back.spans) {
    std::string_view name = back.strings.get(got.name);
    if (name == "cudaLaunchKernel") { EXPECT_EQ(got.correlation, 42); }
    if (name == "aten::mm") { EXPECT_EQ(back.strings.get(got.detail), "[[2, 3], []]"); }
    if (name == "Memcpy HtoD") { EXPECT_EQ(got.bytes, 4096); }
  }
  EXPECT_NE(export_text(run).find(R"("detail":"not JSON \u003cx\u003e")"), std::string::npos);
  ASSERT_EQ(back.counter_tracks.size(), 2u);
  std::vector<std::tuple<std::string, int64_t, int64_t, double>> values;
  for (const CounterValue& v : back.counter_values) {
    const CounterTrack& t = back.counter_tracks.at(v.track);
    values.emplace_back(std::string(back.strings.get(t.name)), t.pid, v.ts_ns, v.value);
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, (std::vector<std::tuple<std::string, int64_t, int64_t, double>>{
                        {"cpu.total.percent", 0, 1000, 12.5}, {"cpu.total.percent", 0, 2001, 99.25}, {"load.value", 3, 1500, 3.0}}));
  EXPECT_EQ(back.strings.get(back.find_process(0)->command), "system");
}

TEST(Perfetto, HostileNamesStayValidJson) {
  stepscope::Run run = fixtures::sampled_run();
  std::string text = export_text(run);
  EXPECT_TRUE(fixtures::valid_utf8(text));
  EXPECT_EQ(text.find("<script>"), std::string::npos);
  stepscope::Run back = import_chrome_trace_bytes(text, "perfetto.json");
  EXPECT_EQ(back.strings.get(back.find_process(200)->command), printable_utf8(fixtures::kHostileCommand));
  EXPECT_EQ(thread_name(back, 100, 101), printable_utf8("pt_data_worker;0 <b>\"w\"</b>"));
}

TEST(Perfetto, SamplesWithoutPeriodAreAnError) {
  stepscope::Run run = fixtures::sampled_run();
  run.metadata.erase("sample_period_ns");
  EXPECT_THROW(export_text(run), InputError);
}

}  // namespace
}  // namespace stepscope
