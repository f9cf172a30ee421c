#include "analyses/window.hpp"

#include <gtest/gtest.h>

#include <string>

#include "collectors/hooks/events.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

// Ten steps of 1 s from clock 10 s on; the recording started at 9 s, its last sample at 20.5 s.
stepscope::Run ten_steps() {
  stepscope::Run run;
  std::string records = "SS1 42\nA 43 10000000000 10000000000\n";  // the first step's start
  for (int64_t i = 0; i < 10; ++i) {
    std::string end = std::to_string((11 + i) * 1'000'000'000);
    records += "S 43 " + end + " " + end + " -1 -1\n";
  }
  HookRunBuilder builder;
  builder.add(run, *decode_hook_datagram(records));
  run.metadata["start_clock_ns"] = "9000000000";
  run.samples.push_back({.ts_ns = 20'500'000'000, .pid = 42, .tid = 43});
  return run;
}

std::string error_of(const stepscope::Run& run, std::string_view spec) {
  try {
    resolve_window(run, spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Window, SecondsCountFromTheStartOrBackFromTheEnd) {
  stepscope::Run run = ten_steps();
  TimeRange w = resolve_window(run, "2:4.5");
  EXPECT_EQ(w.from_ns, 11'000'000'000);
  EXPECT_EQ(w.to_ns, 13'500'000'000);
  w = resolve_window(run, "-1.5:");
  EXPECT_EQ(w.from_ns, 19'000'000'000);
  EXPECT_EQ(w.to_ns, 20'500'000'001);  // the last moment included
  w = resolve_window(run, ":1");
  EXPECT_EQ(w.from_ns, 9'000'000'000);
  EXPECT_EQ(w.to_ns, 10'000'000'000);
  w = resolve_window(run, "-3:-1");
  EXPECT_EQ(w.from_ns, 17'500'000'000);
  EXPECT_EQ(w.to_ns, 19'500'000'000);
}

TEST(Window, StepsAreNumberedFromOne) {
  stepscope::Run run = ten_steps();
  TimeRange w = resolve_window(run, "steps:3:5");
  EXPECT_EQ(w.from_ns, 12'000'000'000);
  EXPECT_EQ(w.to_ns, 15'000'000'000);  // step 6 starts there: left out
  w = resolve_window(run, "steps:8:");
  EXPECT_EQ(w.from_ns, 17'000'000'000);
  EXPECT_EQ(w.to_ns, 20'000'000'000);
}

TEST(Window, ApplyingKeepsTheStepsOfTheWindowAndSaysSo) {
  stepscope::Run run = ten_steps();
  apply_window(run, "steps:3:5");
  size_t steps = 0;
  for (const Span& s : run.spans) steps += s.kind == SpanKind::kStep;
  EXPECT_EQ(steps, 3u);
  EXPECT_EQ(run.metadata["window"], "steps:3:5");
  EXPECT_EQ(run.metadata["window_ns"], "12000000000:15000000000");
}

TEST(Window, BadWindowsAreErrorsThatNameTheRunsRange) {
  stepscope::Run run = ten_steps();
  const std::string range = "the run spans 0 to 11.500 s and steps 1 to 10";
  for (const char* spec : {"3", "a:b", "1:2:3", "1e999:", "nan:", "-inf:", "1e300:", "steps:0:2", "steps:4:3", "steps:1:11", "steps:x"}) {
    std::string error = error_of(run, spec);
    EXPECT_NE(error.find(std::string("--window ") + spec + ": not "), std::string::npos) << spec << ": " << error;
    EXPECT_NE(error.find(range), std::string::npos) << error;
  }
  EXPECT_NE(error_of(run, "5:2").find("ends before it starts; " + range), std::string::npos);
  EXPECT_NE(error_of(run, "12:20").find("outside the run; " + range), std::string::npos);
  EXPECT_NE(error_of(run, "-30:-20").find("outside the run"), std::string::npos);
  EXPECT_NE(error_of(stepscope::Run{}, ":").find("holds nothing"), std::string::npos);
}

}  // namespace
}  // namespace stepscope
