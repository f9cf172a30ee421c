#include "renderers/mlflow/mlflow_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "collectors/hooks/events.hpp"

namespace stepscope {
namespace {

// Two steps of 20 ms and 2 s, recorded from clock time 1 s, Unix time 1.7e18 ns.
Run recorded_run(std::string command = "python train.py") {
  stepscope::Run run;
  HookRunBuilder builder;
  auto datagram = decode_hook_datagram(
      "SS1 42\nP python 3.11.2\nP torch 2.5.0\nP dataloader batch_size=8,num_workers=2\n"
      "D 43 1000000000 1010000000 8 128\nS 43 1020000000 1020000000 8 128\nM 43 1020000000 1020000000 5000 -1\n"
      "S 43 3020000000 3020000000 8 128\nM 43 3020000000 3020000000 6000 -1\n");
  builder.add(run, *datagram);
  run.add_process(42, "python train.py");
  run.metadata["clock"] = "monotonic";
  run.metadata["command"] = std::move(command);
  run.metadata["start_unix_ns"] = "1700000000900000000";
  run.metadata["start_clock_ns"] = "900000000";
  return run;
}

MlflowRunContent content_of(const Run& run, const MlflowRunFacts& facts = {.git_commit = "abc123"}) {
  Report report = build_report(run, "run.db", {}, {}, 1);
  return mlflow_run_content(report, facts);
}

std::vector<MlflowMetric> points(const MlflowRunContent& content, std::string_view key) {
  std::vector<MlflowMetric> found;
  std::copy_if(content.metrics.begin(), content.metrics.end(), std::back_inserter(found),
               [&](const MlflowMetric& m) { return m.key == key; });
  return found;
}

std::string value_of(const MlflowPairs& pairs, std::string_view key) {
  auto it = std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == key; });
  return it == pairs.end() ? "(none)" : it->second;
}

TEST(MlflowRun, OnePointPerStepAtItsEndInUnixTime) {
  MlflowRunContent content = content_of(recorded_run());
  std::vector<MlflowMetric> times = points(content, "step_time_ms");
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].step, 1);
  EXPECT_DOUBLE_EQ(times[0].value, 20);
  EXPECT_EQ(times[0].timestamp_ms, 1'700'000'001'020);  // clock 0.9 s was Unix 1700000000.9 s
  EXPECT_EQ(times[1].step, 2);
  EXPECT_DOUBLE_EQ(times[1].value, 2000);
  EXPECT_EQ(times[1].timestamp_ms, 1'700'000'003'020);
  std::vector<MlflowMetric> waits = points(content, "data_wait_ms");
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_DOUBLE_EQ(waits[0].value, 10);
  EXPECT_DOUBLE_EQ(points(content, "data_wait_share")[0].value, 0.5);
  EXPECT_DOUBLE_EQ(points(content, "samples_per_sec")[1].value, 4);  // 8 samples in 2 s
  EXPECT_DOUBLE_EQ(points(content, "tokens_per_sec")[0].value, 6400);
  EXPECT_DOUBLE_EQ(points(content, "peak_host_memory_bytes")[1].value, 6000);
  EXPECT_TRUE(points(content, "peak_device_memory_bytes").empty());  // never measured
  EXPECT_TRUE(points(content, "forward_share").empty());             // no step measured a forward
  EXPECT_EQ(content.start_ms, 1'700'000'000'900);
  EXPECT_EQ(content.end_ms, 1'700'000'003'020);
}

TEST(MlflowRun, SummaryIsTheReportsSteadyFigures) {
  stepscope::Run run = recorded_run();
  Report report = build_report(run, "run.db", {}, {}, 1);
  MlflowRunContent content = mlflow_run_content(report, {});
  const ProcessSteps& steps = report.steps.processes[report.steps.primary];
  std::vector<MlflowMetric> count = points(content, "summary/steps");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].value, 2);
  EXPECT_EQ(count[0].step, 0);
  EXPECT_EQ(count[0].timestamp_ms, content.end_ms);
  EXPECT_DOUBLE_EQ(points(content, "summary/step_time_p50_ms")[0].value, steps.step_time.p50_ms);
  EXPECT_DOUBLE_EQ(points(content, "summary/samples_per_sec")[0].value, *steps.samples_per_sec);
  EXPECT_DOUBLE_EQ(points(content, "summary/data_wait_share")[0].value, steps.phase_fractions[0]);
  EXPECT_EQ(points(content, "summary/findings")[0].value, static_cast<double>(report.diagnosis.findings.size()));
}

TEST(MlflowRun, ParamsAndTagsNameTheRunAndItsVerdict) {
  MlflowRunContent content = content_of(recorded_run());
  EXPECT_EQ(value_of(content.params, "command"), "python train.py");
  EXPECT_EQ(value_of(content.params, "python"), "3.11.2");
  EXPECT_EQ(value_of(content.params, "torch"), "2.5.0");
  EXPECT_EQ(value_of(content.params, "dataloader"), "batch_size=8,num_workers=2");
  EXPECT_EQ(value_of(content.params, "git_commit"), "abc123");
  EXPECT_EQ(value_of(content.params, "host"), "(none)");  // unknown: left out, not empty
  EXPECT_EQ(value_of(content.tags, "mlflow.source.git.commit"), "abc123");
  EXPECT_EQ(value_of(content.tags, "mlflow.source.name"), "python train.py");
  EXPECT_NE(value_of(content.tags, "stepscope.verdict"), "(none)");
}

// MLflow refuses a param longer than 6000 bytes: a long command is cut, and
// what no one may read as markup or a control sequence is escaped.
TEST(MlflowRun, LongAndHostileValuesAreCutAndEscaped) {
  MlflowRunContent content = content_of(recorded_run(std::string(7000, 'x') + "\x1b[31m"));
  std::string command = value_of(content.params, "command");
  EXPECT_LE(command.size(), kMlflowMaxParamBytes);
  EXPECT_TRUE(command.ends_with("...")) << command.substr(command.size() - 10);
  content = content_of(recorded_run("python \x1b[31mtrain.py\xff"));
  EXPECT_EQ(value_of(content.params, "command"), "python \\x1B[31mtrain.py\\xFF");
}

TEST(MlflowRun, TracesArePlacedByTheirBaseTime) {
  stepscope::Run run;
  run.metadata["clock"] = "trace";
  run.spans.push_back({.start_ns = 5'000'000, .end_ns = 6'000'000});
  EXPECT_EQ(unix_minus_run_clock_ns(run), std::nullopt);  // neither a base time nor epoch times
  run.metadata["baseTimeNanoseconds"] = "1700000000000000000";
  EXPECT_EQ(unix_minus_run_clock_ns(run), 1'700'000'000'000'000'000);
  run.metadata.erase("baseTimeNanoseconds");
  run.spans[0].start_ns = 1'650'000'000'000'000'000;  // an older trace's epoch microseconds, in ns
  EXPECT_EQ(unix_minus_run_clock_ns(run), 0);
}

// A run whose times cannot be placed ends now.
TEST(MlflowRun, AnUnplacedRunEndsNow) {
  stepscope::Run run = recorded_run();
  run.metadata.erase("start_clock_ns");
  run.metadata.erase("start_unix_ns");
  MlflowRunContent content = content_of(run, {.now_unix_ms = 1'800'000'000'000});
  EXPECT_EQ(content.end_ms, 1'800'000'000'000);
  EXPECT_EQ(points(content, "step_time_ms")[1].timestamp_ms, 1'800'000'000'000);
}

}  // namespace
}  // namespace stepscope
