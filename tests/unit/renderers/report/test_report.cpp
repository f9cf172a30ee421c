#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include "analyses/report.hpp"
#include "importers/chrome_trace.hpp"
#include "renderers/report/json.hpp"
#include "renderers/report/text.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

// main -> f -> f (recursion) sampled twice, main -> g once; one idle sample.
stepscope::Run make_run() {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "1000";
  run.metadata["python_version.7"] = "3.12.1";
  Process& p = run.add_process(7, "python \x1b[31mtrain.py", 1);
  p.exit_status = 0;
  FrameId main = run.intern_frame("main", "t.py", 1);
  FrameId f1 = run.intern_frame("f", "t.py", 5);
  FrameId f2 = run.intern_frame("f", "t.py", 6);  // another line of the same function
  FrameId g = run.intern_frame("<g>\"", "t.py", 9);
  StackId recursive = run.stacks.intern({main, f1, f2});
  run.samples.push_back({0, 7, 7, recursive, ThreadState::kRunning});
  run.samples.push_back({1, 7, 7, recursive, ThreadState::kRunning});
  run.samples.push_back({2, 7, 8, run.stacks.intern({main, g}), ThreadState::kDiskWait});
  run.samples.push_back({3, 7, 8, run.stacks.intern({main}), ThreadState::kIdle});
  return run;
}

TEST(FunctionCosts, SelfAndTotalWithRecursionCountedOnce) {
  stepscope::Run run = make_run();
  FunctionCosts costs = function_costs(build_profile(run));
  EXPECT_EQ(costs.profile_ns, 3000);
  ASSERT_EQ(costs.functions.size(), 3u);
  EXPECT_EQ(run.strings.get(costs.functions[0].function), "f");
  EXPECT_EQ(costs.functions[0].self_ns, 2000);
  EXPECT_EQ(costs.functions[0].total_ns, 2000);  // not 4000: once per stack
  EXPECT_EQ(run.strings.get(costs.functions[2].function), "main");
  EXPECT_EQ(costs.functions[2].self_ns, 0);
  EXPECT_EQ(costs.functions[2].total_ns, 3000);
}

TEST(ProcessSummary, CountsThreadsAndStates) {
  stepscope::Run run = make_run();
  auto processes = summarize_processes(run);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].threads, 2u);
  EXPECT_EQ(processes[0].samples, 4u);
  EXPECT_EQ(processes[0].running, 2u);
  EXPECT_EQ(processes[0].idle, 1u);
  EXPECT_EQ(processes[0].disk_wait, 1u);
  EXPECT_EQ(processes[0].python_version, "3.12.1");
}

TEST(ReportJson, ParsesAndEscapes) {
  stepscope::Run run = make_run();
  Report report = build_report(run, "run.db", {});
  std::ostringstream out;
  write_report_json(report, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(out.str());
  EXPECT_EQ(std::string_view(doc["schema"]), "stepscope.report/1");
  EXPECT_EQ(std::string_view(doc["processes"].at(0)["command"]), "python \\x1Btrain.py"[0] == 'p'
                ? std::string_view("python \\x1B[31mtrain.py") : "");
  EXPECT_EQ(int64_t(doc["processes"].at(0)["exit_status"]), 0);
  EXPECT_EQ(int64_t(doc["profile"]["total_ns"]), 3000);
  simdjson::dom::array functions = doc["profile"]["functions"];
  EXPECT_EQ(functions.size(), 3u);
  bool found_quote_name = false;
  for (simdjson::dom::element f : functions) {
    found_quote_name |= std::string_view(f["name"]) == "<g>\"";
  }
  EXPECT_TRUE(found_quote_name);
  EXPECT_EQ(out.str().find("<g>"), std::string::npos) << "markup characters must be escaped";
}

TEST(ReportText, ShowsProcessesAndFunctionsWithoutControlCharacters) {
  stepscope::Run run = make_run();
  std::ostringstream out;
  write_report_text(build_report(run, "run.db", {}), out);
  std::string text = out.str();
  EXPECT_NE(text.find("3.12.1"), std::string::npos);
  EXPECT_NE(text.find("f (t.py)"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "an escape sequence from a name reached the terminal";
}

// Kineto writes its own bookkeeping track with a string pid ("Spans"); the
// report names it by that string, not by the id the importer made for it.
TEST(ReportText, NamesATraceTrackWithAStringPidByItsString) {
  stepscope::Run run = import_chrome_trace_bytes(R"json([
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
     "ts": 0, "dur": 100}])json",
                                                 "trace.json");
  std::ostringstream out;
  write_report_text(build_report(run, "trace.json", {}), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("left out: \"Spans\""), std::string::npos) << text;
  EXPECT_EQ(text.find(std::to_string(kSyntheticIdBase)), std::string::npos) << text;
}

// A function table takes its unit from its whole: a trace of a few steps
// lasts milliseconds, and in seconds every row would read "0.00 s".
TEST(ReportText, FunctionTimesInMillisecondsBelowASecondInAll) {
  auto functions_of = [](int64_t op_us) {
    stepscope::Run run = import_chrome_trace_bytes(
        fmt::format(R"json([{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 0, "dur": {}}}])json",
                    op_us),
        "trace.json");
    std::ostringstream out;
    write_report_text(build_report(run, "trace.json", {}), out);
    std::string text = out.str();
    return text.substr(text.find("Top functions by self time"));
  };
  std::string short_trace = functions_of(12'345);
  EXPECT_NE(short_trace.find("span self time, 12.35 ms in all)"), std::string::npos) << short_trace;
  EXPECT_NE(short_trace.find("12.35 ms   12.35 ms  aten::mm"), std::string::npos) << short_trace;
  std::string long_trace = functions_of(2'500'000);
  EXPECT_NE(long_trace.find("2.50 s     2.50 s  aten::mm"), std::string::npos) << long_trace;
}

// A conda environment's site-packages make paths of over 100 characters: the
// table keeps the file's name and cuts the middle of its directory.
TEST(ReportText, LongFilePathsKeepTheirFileName) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "1000";
  const std::string file =
      "/home/someone/miniconda3/envs/train/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py";
  run.samples.push_back({0, 7, 7, run.stacks.intern({run.intern_frame("forward", file, 1)}), ThreadState::kRunning});
  std::ostringstream out;
  write_report_text(build_report(run, "run.db", {}), out);
  std::string text = out.str();
  EXPECT_NE(text.find("forward (/home/someone/miniconda3/envs/train/lib...formers/models/llama/modeling_llama.py)\n"),
            std::string::npos)
      << text;
}

// A native frame where no symbol covers the pc has no function name: the
// table says so rather than leaving the column blank.
TEST(ReportText, AnUnnamedNativeFunctionIsUnknown) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "1000";
  FrameId unnamed = run.intern_frame("", "/usr/bin/python3.11", 0, FrameKind::kNative);
  run.samples.push_back({0, 7, 7, run.stacks.intern({run.intern_frame("main", "t.py", 1), unnamed}),
                         ThreadState::kRunning});
  std::ostringstream out;
  write_report_text(build_report(run, "run.db", {}), out);
  EXPECT_NE(out.str().find("  <unknown> (/usr/bin/python3.11)\n"), std::string::npos) << out.str();
}

// The profile is the only analysis that fails on its input; it starts after
// the device analyses and ops, which cannot fail, so a sampled run without a
// period fails with its error whatever the number of threads.
TEST(BuildReport, ASampledRunWithoutAPeriodFailsInTheProfileOnAnyThreads) {
  stepscope::Run run = make_run();
  run.metadata.erase("sample_period_ns");
  for (size_t threads : {1u, 2u, 3u}) {
    try {
      build_report(run, "run.db", {}, {}, threads);
      ADD_FAILURE() << threads << " threads: no error";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("sample_period_ns"), std::string::npos) << error.what();
    }
  }
}

// A recording: 100 ms of start-up (an import), then five 10 ms steps, the
// first of them warm-up, with the step's function sampled every 1 ms.
stepscope::Run run_with_startup_and_steps() {
  constexpr int64_t kMs = 1'000'000;
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(kMs);
  run.add_process(7, "python train.py", 1);
  StackId importing = run.stacks.intern({run.intern_frame("import_torch", "t.py", 1)});
  StackId stepping = run.stacks.intern({run.intern_frame("forward_pass", "t.py", 2)});
  for (int64_t ms = 0; ms < 150; ++ms) {
    run.samples.push_back({ms * kMs, 7, 7, ms < 100 ? importing : stepping, ThreadState::kRunning});
  }
  for (int64_t i = 0; i < 5; ++i) {
    run.spans.push_back({(100 + 10 * i) * kMs, (110 + 10 * i) * kMs, 7, 7, SpanKind::kStep, run.strings.intern("step")});
  }
  return run;
}

// The first screen's hottest functions are those of the steady steps; the
// whole run's stay in the details and the JSON's `functions`.
TEST(BuildReport, HottestFunctionsOfTheSteadySteps) {
  stepscope::Run run = run_with_startup_and_steps();
  Report report = build_report(run, "run.db", {});
  ASSERT_TRUE(report.step_functions);
  const StepFunctions& in_steps = *report.step_functions;
  EXPECT_EQ(in_steps.pid, 7);
  EXPECT_EQ(in_steps.steps, 4u);
  EXPECT_EQ(in_steps.from_ns, 110'000'000);
  EXPECT_EQ(in_steps.to_ns, 150'000'000);
  ASSERT_EQ(in_steps.costs.functions.size(), 1u);
  EXPECT_EQ(run.strings.get(in_steps.costs.functions[0].function), "forward_pass");
  EXPECT_EQ(in_steps.costs.profile_ns, 40'000'000);
  EXPECT_EQ(run.strings.get(report.functions.functions.at(0).function), "import_torch");

  std::ostringstream text;
  write_report_text(report, text, {});
  const std::string shown = text.str();
  auto hottest = shown.find("Hottest functions (self time during the 4 steady steps of pid 7");
  ASSERT_NE(hottest, std::string::npos) << shown;
  EXPECT_LT(shown.find("forward_pass", hottest), shown.find("import_torch", hottest));

  std::ostringstream json;
  write_report_json(report, json);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.str());
  simdjson::dom::element root = parser.parse(padded);
  EXPECT_EQ(int64_t(root["profile"]["in_steps"]["steps"]), 4);
  EXPECT_EQ(std::string_view(root["profile"]["in_steps"]["functions"].at(0)["name"]), "forward_pass");
  EXPECT_EQ(std::string_view(root["profile"]["functions"].at(0)["name"]), "import_torch");
}

// Without steady steps, the hottest functions are the whole run's.
TEST(BuildReport, NoStepsNoStepFunctions) {
  stepscope::Run run = make_run();
  Report report = build_report(run, "run.db", {});
  EXPECT_FALSE(report.step_functions);
  std::ostringstream json;
  write_report_json(report, json);
  EXPECT_NE(json.str().find("\"in_steps\":null"), std::string::npos);
}

}  // namespace
}  // namespace stepscope
