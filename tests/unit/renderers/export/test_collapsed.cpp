#include "renderers/export/collapsed.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyses/profile.hpp"
#include "run/frame_label.hpp"
#include "run_fixtures.hpp"

namespace stepscope {
namespace {

using fixtures::split;
using Frames = std::vector<std::string>;
using Lines = std::map<Frames, uint64_t>;

std::string render(const Run& run) {
  std::ostringstream out;
  write_collapsed(run, build_profile(run), out);
  return out.str();
}

// Undoes the \xNN escapes; every `\` in a collapsed label starts one.
std::string unescape(std::string_view frame) {
  std::string out;
  for (size_t i = 0; i < frame.size(); ++i) {
    if (frame[i] == '\\') {
      EXPECT_LE(i + 4, frame.size()) << frame;
      EXPECT_EQ(frame[i + 1], 'x') << frame;
      out.push_back(static_cast<char>(std::stoi(std::string(frame.substr(i + 2, 2)), nullptr, 16)));
      i += 3;
    } else {
      out.push_back(frame[i]);
    }
  }
  return out;
}

struct ParsedLine {
  Frames frames;  // unescaped
  uint64_t count = 0;
};

// Splits the count at the last space and the frames at every `;`.
std::vector<ParsedLine> parse(const std::string& text) {
  std::vector<ParsedLine> lines;
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  for (const std::string& line : split(text, '\n')) {
    if (line.empty()) continue;
    EXPECT_TRUE(fixtures::valid_utf8(line)) << line;
    for (char c : line) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << line;
    size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    ParsedLine& parsed = lines.emplace_back();
    parsed.count = std::stoull(line.substr(space + 1));
    for (const std::string& frame : split(line.substr(0, space), ';')) {
      parsed.frames.push_back(unescape(frame));
    }
  }
  return lines;
}

// The lines a sampled run should give, from its raw samples.
Lines expected_sample_lines(const Run& run) {
  Lines lines;
  for (const Sample& sample : run.samples) {
    Frames frames = {process_label(run, sample.pid), thread_label(run, sample.pid, sample.tid)};
    for (FrameId frame : run.stacks.frames(sample.stack)) {
      frames.push_back(frame_label(run.strings, run.frames.get(frame)));
    }
    lines[frames] += 1;
  }
  return lines;
}

TEST(FrameLabel, FollowsTheCollapsedStackConvention) {
  stepscope::Run run;
  auto label = [&](std::string_view function, std::string_view file, int32_t line, FrameKind kind) {
    return frame_label(run.strings, run.frames.get(run.intern_frame(function, file, line, kind)));
  };
  EXPECT_EQ(label("step", "train.py", 20, FrameKind::kPython), "step (train.py:20)");
  EXPECT_EQ(label("step", "train.py", 0, FrameKind::kPython), "step (train.py)");
  EXPECT_EQ(label("step", "", 20, FrameKind::kPython), "step");
  EXPECT_EQ(label("", "train.py", 3, FrameKind::kPython), "<unknown> (train.py:3)");
  EXPECT_EQ(label("at::add", "/opt/lib/libtorch.so", 7, FrameKind::kNative), "at::add (libtorch.so)");
  EXPECT_EQ(label("at::add", "", 0, FrameKind::kNative), "at::add");
  EXPECT_EQ(label("<GC>", "", 0, FrameKind::kMarker), "<GC>");
}

TEST(FrameLabel, NamesProcessesAndThreads) {
  stepscope::Run run;
  run.add_process(7, "python train.py");
  run.add_process(8, "");
  run.add_thread(7, 9, "MainThread");
  run.add_thread(7, 10, "");
  EXPECT_EQ(process_label(run, 7), "process 7 \"python train.py\"");
  EXPECT_EQ(process_label(run, 8), "process 8");
  EXPECT_EQ(process_label(run, 99), "process 99");
  EXPECT_EQ(thread_label(run, 7, 9), "thread 9 \"MainThread\"");
  EXPECT_EQ(thread_label(run, 7, 10), "thread 10");
  EXPECT_EQ(thread_label(run, 8, 9), "thread 9");
}

TEST(Collapsed, SampledRunSplitsBackIntoExactlyItsStacks) {
  stepscope::Run run = fixtures::sampled_run();
  Lines parsed;
  for (ParsedLine& line : parse(render(run))) {
    EXPECT_TRUE(parsed.emplace(line.frames, line.count).second) << "duplicate line";
  }
  EXPECT_EQ(parsed, expected_sample_lines(run));
}

TEST(Collapsed, CountsSumToEachThreadsSamples) {
  stepscope::Run run = fixtures::sampled_run();
  std::map<std::string, uint64_t> per_thread;
  for (const ParsedLine& line : parse(render(run))) per_thread[line.frames[1]] += line.count;
  EXPECT_EQ(per_thread["thread 100 \"MainThread\""], 12u);
  EXPECT_EQ(per_thread["thread 101 \"pt_data_worker;0 <b>\"w\"</b>\""], 8u);
  EXPECT_EQ(per_thread["thread 201"], 5u);
}

TEST(Collapsed, WritesTheConventionalLineFormat) {
  std::string text = render(fixtures::sampled_run());
  EXPECT_NE(text.find("process 100 \"python train.py\";thread 100 \"MainThread\";"
                      "<module> (train.py:1);train (train.py:10);step (train.py:20) 5\n"),
            std::string::npos);
  EXPECT_NE(text.find(";bad\\xFF\\xFE 4\n"), std::string::npos);
  EXPECT_NE(text.find(";semi\\x3Bcolon and space (dir with space/a\\x3Bb.py);"
                      "new\\x0Aline\\x5Cback\\x09slash (x.py:3) 2\n"),
            std::string::npos);
  // The empty stack is the thread alone.
  EXPECT_NE(text.find("thread 101 \"pt_data_worker\\x3B0 <b>\"w\"</b>\" 1\n"), std::string::npos);
}

TEST(Collapsed, OrdersByPidTidThenLine) {
  std::vector<std::string> lines = split(render(fixtures::sampled_run()), '\n');
  lines.pop_back();  // after the last newline
  std::vector<std::pair<std::string, std::string>> order;
  for (const std::string& line : lines) {
    auto frames = split(line, ';');
    order.emplace_back(frames[0] + ";" + frames[1], line);
  }
  EXPECT_EQ(order.front().first.rfind("process 100 \"python train.py\";thread 100 ", 0), 0u);
  EXPECT_EQ(order.back().first.rfind("process 200 ", 0), 0u);
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i].first == order[i - 1].first) {
      EXPECT_LT(order[i - 1].second, order[i].second);
    }
  }
  EXPECT_EQ(render(fixtures::sampled_run()), render(fixtures::sampled_run()));
}

TEST(Collapsed, SpanRunWritesSelfTimeInMicrosecondsAndSkipsZero) {
  stepscope::Run run = fixtures::span_run();
  Lines parsed;
  for (ParsedLine& line : parse(render(run))) parsed[line.frames] = line.count;
  const std::string main = "thread 10 \"MainThread\"";
  const std::string process = "process 10 \"python infer.py\"";
  EXPECT_EQ((parsed[{process, main, "step 1"}]), 100u);
  EXPECT_EQ((parsed[{process, main, "step 1", "forward;fwd"}]), 200u);
  EXPECT_EQ((parsed[{process, main, "step 1", "forward;fwd", "aten::mm <&> \xff"}]), 100u);
  EXPECT_EQ((parsed[{process, main, "step 1", "backward\n"}]), 500u);
  EXPECT_EQ((parsed[{process, main, "step 1", "optimizer"}]), 100u);
  EXPECT_EQ((parsed[{process, main, "step 2"}]), 1000u);  // 999.6 us
  EXPECT_EQ(parsed.count({process, main, "step 2", "]]>"}), 0u);   // zero length
  EXPECT_EQ(parsed.count({process, main, "step 2", "tiny"}), 0u);  // 0.4 us
  const std::string other = std::string("thread 11 \"") + fixtures::kScriptName + "\"";
  EXPECT_EQ((parsed[{process, other, fixtures::kScriptName}]), 400u);
  EXPECT_EQ((parsed[{process, other, fixtures::kScriptName, "outlives;parent"}]), 400u);
  EXPECT_EQ(parsed.size(), 8u);  // the kernel is device activity, not a host stack
}

TEST(Collapsed, EmptyRunWritesNothing) {
  stepscope::Run run;
  EXPECT_EQ(render(run), "");
}

}  // namespace
}  // namespace stepscope
