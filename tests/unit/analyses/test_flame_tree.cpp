#include "analyses/flame_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "run_fixtures.hpp"

namespace stepscope {
namespace {

using fixtures::kSamplePeriodNs;
constexpr size_t kOther = static_cast<size_t>(FlamePhase::kOther);
constexpr size_t kForward = static_cast<size_t>(FlamePhase::kForward);
constexpr size_t kOutside = static_cast<size_t>(FlamePhase::kOutside);

// One process: a step [0, 10p) holding a forward phase [1p, 4p) on another
// thread of the same process; samples inside the forward, inside the step
// only, and outside, plus an idle one.
stepscope::Run phased_run() {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(kSamplePeriodNs);
  run.add_process(1, "python");
  run.add_thread(1, 1, "MainThread");
  run.add_thread(1, 2, "worker");
  const int64_t p = kSamplePeriodNs;
  run.spans.push_back({0, 10 * p, 1, 1, SpanKind::kStep, run.strings.intern("step")});
  run.spans.push_back({1 * p, 4 * p, 1, 1, SpanKind::kForward, run.strings.intern("forward")});
  FrameId a = run.intern_frame("a", "f.py", 1);
  FrameId b = run.intern_frame("b", "f.py", 2);
  run.samples.push_back({0, 1, 1, run.stacks.intern({a}), ThreadState::kRunning});          // other
  run.samples.push_back({2 * p, 1, 1, run.stacks.intern({a, b}), ThreadState::kRunning});   // forward
  run.samples.push_back({3 * p, 1, 2, run.stacks.intern({a, b}), ThreadState::kRunning});   // forward, thread 2
  run.samples.push_back({5 * p, 1, 1, run.stacks.intern({a}), ThreadState::kIdle});         // left out
  run.samples.push_back({20 * p, 1, 1, run.stacks.intern({a}), ThreadState::kRunning});     // outside
  return run;
}

const FlameNode* find_child(const FlameProcess& process, uint32_t parent, FrameId frame) {
  for (size_t i = 1; i < process.nodes.size(); ++i) {
    const FlameNode& n = process.nodes[i];
    if (n.parent == parent && n.frame == frame) return &n;
  }
  return nullptr;
}

TEST(FlameTree, SplitsEachNodeByThePhaseOfItsProcess) {
  stepscope::Run run = phased_run();
  Profile profile = build_profile(run);
  FlameTree tree = build_flame_tree(run, profile, {.include_idle = false, .min_fraction = 0});
  ASSERT_TRUE(tree.has_phases);
  ASSERT_EQ(tree.processes.size(), 1u);
  const FlameProcess& process = tree.processes[0];
  const int64_t p = kSamplePeriodNs;
  EXPECT_EQ(process.total_ns(), 4 * p);
  EXPECT_EQ(process.nodes[0].total_ns[kOther], p);
  EXPECT_EQ(process.nodes[0].total_ns[kForward], 2 * p);
  EXPECT_EQ(process.nodes[0].total_ns[kOutside], p);
  // Threads under the process, frames under the threads: parents first.
  ASSERT_EQ(process.nodes.size(), 7u);  // the process, and a thread with a and b under it, twice
  size_t threads = 0;
  for (size_t i = 1; i < process.nodes.size(); ++i) {
    EXPECT_LT(process.nodes[i].parent, i);
    if (process.nodes[i].parent == 0) ++threads;
  }
  EXPECT_EQ(threads, 2u);
  const FlameNode& thread1 = process.nodes[1];
  EXPECT_EQ(thread1.tid, 1);
  FrameId b = run.intern_frame("b", "f.py", 2);
  const FlameNode* a1 = find_child(process, 1, run.intern_frame("a", "f.py", 1));
  ASSERT_NE(a1, nullptr);
  EXPECT_EQ(a1->total_ns[kOther] + a1->total_ns[kForward] + a1->total_ns[kOutside], 3 * p);
  const FlameNode* b1 = find_child(process, static_cast<uint32_t>(a1 - process.nodes.data()), b);
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->total_ns[kForward], p);
  EXPECT_EQ(b1->total_ns[kOther], 0);
}

// Many phases on two threads, overlapping across them, and samples at every
// time: the process's phase totals are those of a direct look at the spans,
// whether the samples come in time order (each answer walks on from the
// last), backwards (each searches from the start), or shuffled.
TEST(FlameTree, PhasesAreFoundInAnySampleOrder) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(kSamplePeriodNs);
  run.add_process(1, "python");
  const int64_t p = kSamplePeriodNs;
  std::mt19937 random(7);
  const SpanKind kinds[] = {SpanKind::kDataWait, SpanKind::kForward, SpanKind::kBackward, SpanKind::kOptimizer};
  for (int64_t tid : {1, 2}) {
    int64_t at = tid * 3 * p;
    for (int step = 0; step < 60; ++step) {
      const int64_t step_start = at;
      for (SpanKind kind : kinds) {
        const int64_t length = static_cast<int64_t>(1 + random() % 5) * p;
        run.spans.push_back({at, at + length, 1, tid, kind, run.strings.intern("phase")});
        at += length + static_cast<int64_t>(random() % 3) * p;  // gaps: the step's other time
      }
      run.spans.push_back({step_start, at, 1, tid, SpanKind::kStep, run.strings.intern("step")});
      at += static_cast<int64_t>(random() % 4) * p;  // between steps: outside
    }
  }
  StackId stack = run.stacks.intern({run.intern_frame("a", "f.py", 1)});
  for (int64_t ts = 0; ts < 1200 * p; ts += p / 2) {
    run.samples.push_back({ts, 1, static_cast<int32_t>(1 + ts / (p / 2) % 2), stack, ThreadState::kRunning});
  }
  const std::pair<SpanKind, FlamePhase> order[] = {  // named phases first, then a step, as the tree
      {SpanKind::kDataWait, FlamePhase::kDataWait}, {SpanKind::kForward, FlamePhase::kForward},
      {SpanKind::kBackward, FlamePhase::kBackward}, {SpanKind::kOptimizer, FlamePhase::kOptimizer},
      {SpanKind::kStep, FlamePhase::kOther}};
  auto direct = [&](int64_t ts) {
    for (auto [kind, phase] : order) {
      for (const Span& span : run.spans) {
        if (span.kind == kind && span.start_ns <= ts && ts < span.end_ns) return phase;
      }
    }
    return FlamePhase::kOutside;
  };
  std::array<int64_t, kFlamePhaseCount> want{};
  for (const Sample& s : run.samples) want[static_cast<size_t>(direct(s.ts_ns))] += p;
  ASSERT_GT(want[kForward], 0);
  ASSERT_GT(want[kOther], 0);
  ASSERT_GT(want[kOutside], 0);
  auto totals = [&] {
    FlameTree tree = build_flame_tree(run, build_profile(run), {.include_idle = false, .min_fraction = 0});
    return tree.processes.at(0).nodes[0].total_ns;
  };
  EXPECT_EQ(totals(), want);
  std::reverse(run.samples.begin(), run.samples.end());
  EXPECT_EQ(totals(), want);
  std::shuffle(run.samples.begin(), run.samples.end(), random);
  EXPECT_EQ(totals(), want);
}

TEST(FlameTree, DropsNodesLighterThanTheThreshold) {
  stepscope::Run run = phased_run();
  Profile profile = build_profile(run);
  // b weighs 1 of 4 periods on each thread; thread 2 weighs 1 of 4 too.
  FlameTree tree = build_flame_tree(run, profile, {.include_idle = false, .min_fraction = 0.3});
  const FlameProcess& process = tree.processes[0];
  EXPECT_EQ(process.total_ns(), 4 * kSamplePeriodNs);  // the root keeps everything
  ASSERT_EQ(process.nodes.size(), 3u);                 // root, thread 1, a
  EXPECT_EQ(process.nodes[2].parent, 1u);
}

TEST(FlameTree, TracesGiveOneUnphasedTreeFromSpanNesting) {
  stepscope::Run run = fixtures::span_run();
  Profile profile = build_profile(run);
  FlameTree tree = build_flame_tree(run, profile, {.include_idle = false, .min_fraction = 0});
  EXPECT_FALSE(tree.has_phases);
  ASSERT_EQ(tree.processes.size(), 1u);
  int64_t profile_total = 0;
  for (const ThreadProfile& t : profile.threads) profile_total += t.total_ns();
  EXPECT_EQ(tree.processes[0].total_ns(), profile_total);
  EXPECT_EQ(tree.processes[0].nodes[0].total_ns[kOutside], profile_total);
}

}  // namespace
}  // namespace stepscope
