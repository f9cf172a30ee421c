#include "renderers/metrics/prometheus.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "analyses/live_counters.hpp"
#include "collectors/hooks/events.hpp"

namespace stepscope {
namespace {

Run stepping_run() {
  stepscope::Run run;
  HookRunBuilder builder;
  auto datagram = decode_hook_datagram(
      "SS1 42\nP rank 3\nP local_rank 1\n"
      "D 43 1000000000 1010000000 8 128\nS 43 1020000000 1020000000 8 128\nM 43 1020000000 1020000000 5000 -1\n"
      "S 43 3020000000 3020000000 8 128\nM 43 3020000000 3020000000 6000 -1\n");
  builder.add(run, *datagram);
  return run;
}

std::string exposition(const Run& run, const ExpositionContext& context = {}) {
  LiveSteps steps;
  steps.update(run);
  SamplerStats stats;
  stats.rounds = 50;
  stats.samples = 120;
  stats.error_samples = 2;
  LiveCounters counters;
  counters.update(run);
  return prometheus_exposition(run, steps, counters.gauges(), stats, context);
}

TEST(Prometheus, WritesTheStepMetricsOfEachRank) {
  std::string text = exposition(stepping_run(), {.host = "node-1", .job = "77", .recording_seconds = 0.5});
  const std::string labels = "{host=\"node-1\",job=\"77\",rank=\"3\",local_rank=\"1\"";
  EXPECT_NE(text.find("# TYPE stepscope_steps_total counter\nstepscope_steps_total" + labels + "} 2\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("stepscope_step_duration_seconds_bucket" + labels + ",le=\"0.025\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_step_duration_seconds_bucket" + labels + ",le=\"2.5\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_step_duration_seconds_bucket" + labels + ",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_step_duration_seconds_count" + labels + "} 2\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_samples_total" + labels + "} 16\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_phase_seconds_total" + labels + ",phase=\"data_wait\"} 0.01\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_step_peak_memory_bytes" + labels + ",kind=\"host\"} 6000\n"), std::string::npos);
  EXPECT_EQ(text.find("kind=\"device\""), std::string::npos);  // never measured
  EXPECT_NE(text.find("stepscope_recorder_error_samples_total{host=\"node-1\",job=\"77\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_recorder_rate_hertz{host=\"node-1\",job=\"77\"} 100\n"), std::string::npos);
}

// Every line is a comment or `name{labels} value`, with each family's HELP and
// TYPE before its series, once.
TEST(Prometheus, EveryLineFollowsTheTextFormat) {
  std::string text = exposition(stepping_run(), {.host = "a\"b\\c\nd\xff"});
  std::regex series(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})? \S+$)");
  std::istringstream lines(text);
  std::string line;
  size_t count = 0;
  while (std::getline(lines, line)) {
    ++count;
    if (line.rfind("# ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, series)) << line;
  }
  EXPECT_GT(count, 30u);
  EXPECT_NE(text.find("host=\"a\\\"b\\\\c\\\\x0Ad\\\\xFF\""), std::string::npos) << text.substr(0, 300);
}

// The monitor's readings: running processes only, GPUs labelled as DCGM's exporter does.
TEST(Prometheus, WritesTheMonitorsLatestReadings) {
  stepscope::Run run = stepping_run();
  run.add_process(42, "python train.py");
  run.add_process(50, "python worker").end_ns = 5;  // exited: its last reading is not current
  auto counter = [&](std::string_view name, int64_t pid, double value) {
    run.counter_tracks.push_back({run.strings.intern(name), pid, run.strings.intern("")});
    run.counter_values.push_back({static_cast<CounterTrackId>(run.counter_tracks.size() - 1), 1, value});
  };
  counter("process.rss_bytes", 42, 1000);
  counter("process.rss_bytes", 42, 2000);  // the latest wins
  counter("process.rss_bytes", 50, 7);
  counter("process.cpu_percent", 42, 150);
  counter("gpu.1.util_percent", 0, 40);
  counter("gpu.1.memory_used_bytes", 0, 3e9);
  counter("gpu.x.util_percent", 0, 99);  // not a GPU's
  run.metadata["sysmon_gpu.1.uuid"] = "GPU-5fb7";
  run.metadata["sysmon_gpu.1.name"] = "NVIDIA H200";
  std::string text = exposition(run, {.host = "n1"});
  EXPECT_NE(text.find("stepscope_process_resident_memory_bytes{host=\"n1\",rank=\"3\",local_rank=\"1\"} 2000\n"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("pid=\"50\""), std::string::npos);
  EXPECT_NE(text.find("stepscope_process_cpu_ratio{host=\"n1\",rank=\"3\",local_rank=\"1\"} 1.5\n"), std::string::npos);
  const std::string gpu = "{host=\"n1\",gpu=\"1\",UUID=\"GPU-5fb7\",modelName=\"NVIDIA H200\",Hostname=\"n1\"}";
  EXPECT_NE(text.find("stepscope_gpu_utilization_ratio" + gpu + " 0.4\n"), std::string::npos);
  EXPECT_NE(text.find("stepscope_gpu_memory_used_bytes" + gpu + " 3000000000\n"), std::string::npos);
  EXPECT_EQ(text.find("0.99"), std::string::npos);
}

TEST(Prometheus, WithoutStepsOnlyTheRecordersHealth) {
  stepscope::Run run;
  run.add_process(9, "python");
  std::string text = exposition(run);
  EXPECT_EQ(text.find("stepscope_steps_total"), std::string::npos);
  EXPECT_NE(text.find("stepscope_recorder_samples_total 120\n"), std::string::npos) << text;
}

TEST(Prometheus, AProcessWithoutARankIsNamedByItsPid) {
  stepscope::Run run;
  HookRunBuilder builder;
  builder.add(run, *decode_hook_datagram("SS1 42\nA 43 1000 1000\nS 43 1100 1100 -1 -1\n"));
  std::string text = exposition(run);
  EXPECT_NE(text.find("stepscope_steps_total{pid=\"42\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("stepscope_samples_total{"), std::string::npos);  // unknown, not 0
}

}  // namespace
}  // namespace stepscope
