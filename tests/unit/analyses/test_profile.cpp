#include <gtest/gtest.h>

#include "analyses/profile.hpp"
#include "run/profiler_step_name.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

const StackWeight* find_stack(const Profile& profile, const ThreadProfile& thread,
                              const std::vector<std::string>& names, const stepscope::Run& run) {
  for (const StackWeight& w : thread.stacks) {
    std::vector<std::string> got;
    for (FrameId f : profile.stacks().frames(w.stack)) {
      got.push_back(run.strings.get(profile.frames().get(f).function));
    }
    if (got == names) return &w;
  }
  return nullptr;
}

TEST(Profile, SamplesWeighOnePeriodEach) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "1000";
  StackId a = run.stacks.intern({run.intern_frame("main", "t.py", 1), run.intern_frame("step", "t.py", 2)});
  StackId b = run.stacks.intern({run.intern_frame("main", "t.py", 1)});
  for (int i = 0; i < 3; ++i) run.samples.push_back({i, 1, 10, a, ThreadState::kRunning});
  run.samples.push_back({5, 1, 10, b, ThreadState::kRunning});
  run.samples.push_back({6, 1, 11, b, ThreadState::kUnknown});

  Profile profile = build_profile(run);
  EXPECT_EQ(profile.source, ProfileSource::kSamples);
  ASSERT_EQ(profile.threads.size(), 2u);
  EXPECT_EQ(profile.threads[0].tid, 10);
  EXPECT_EQ(profile.threads[0].total_ns(), 4000);
  const StackWeight* step = find_stack(profile, profile.threads[0], {"main", "step"}, run);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->count, 3u);
  EXPECT_EQ(step->weight_ns, 3000);
  EXPECT_EQ(profile.threads[1].total_ns(), 1000);
}

TEST(Profile, IdleSamplesOnlyWhenAsked) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = "1000";
  StackId wait = run.stacks.intern({run.intern_frame("wait", "threading.py", 300)});
  run.samples.push_back({0, 1, 1, wait, ThreadState::kIdle});
  run.samples.push_back({1, 1, 1, wait, ThreadState::kDiskWait});
  run.samples.push_back({2, 1, 1, wait, ThreadState::kRunning});
  EXPECT_EQ(build_profile(run).threads[0].total_ns(), 2000);
  EXPECT_EQ(build_profile(run, {.include_idle = true}).threads[0].total_ns(), 3000);
  EXPECT_FALSE(run_wants_idle(run));
  run.metadata["profile_idle"] = "1";
  EXPECT_TRUE(run_wants_idle(run));
}

TEST(Profile, SamplesWithoutPeriodAreAnError) {
  stepscope::Run run;
  run.samples.push_back({0, 1, 1, StackTree::kRoot, ThreadState::kRunning});
  EXPECT_THROW(build_profile(run), InputError);
}

// step [0,100) contains forward [10,40) which contains matmul [20,30), and
// backward [50,90); self times: step 30, forward 20, matmul 10, backward 40.
TEST(Profile, SpansNestIntoStacksWeightedBySelfTime) {
  stepscope::Run run;
  auto span = [&](int64_t start, int64_t end, const char* name, SpanKind kind = SpanKind::kUserRange) {
    run.spans.push_back({start, end, 1, 7, kind, run.strings.intern(name)});
  };
  span(10, 40, "forward");  // out of order on purpose: the analysis sorts
  span(0, 100, "step");
  span(20, 30, "matmul", SpanKind::kCpuOp);
  span(50, 90, "backward");
  span(20, 25, "gemm_kernel", SpanKind::kKernel);  // device work: not a host frame

  Profile profile = build_profile(run);
  EXPECT_EQ(profile.source, ProfileSource::kSpans);
  ASSERT_EQ(profile.threads.size(), 1u);
  const ThreadProfile& t = profile.threads[0];
  EXPECT_EQ(t.total_ns(), 100);
  EXPECT_EQ(find_stack(profile, t, {"step"}, run)->weight_ns, 30);
  EXPECT_EQ(find_stack(profile, t, {"step", "forward"}, run)->weight_ns, 20);
  EXPECT_EQ(find_stack(profile, t, {"step", "forward", "matmul"}, run)->weight_ns, 10);
  EXPECT_EQ(find_stack(profile, t, {"step", "backward"}, run)->weight_ns, 40);
  EXPECT_EQ(find_stack(profile, t, {"step", "forward", "gemm_kernel"}, run), nullptr);
}

// A trace's own tracks are not threads: Kineto's "PyTorch Profiler (0)"
// range (kind other, alone on its "Spans" track) would otherwise top the
// profile with the whole trace as self time; device-side user ranges
// (gpu_user_annotation) are device activity.
TEST(Profile, TraceBookkeepingAndDeviceRangesAreNotHostThreads) {
  stepscope::Run run;
  run.spans.push_back({0, 1000, 9, 9, SpanKind::kOther, run.strings.intern("PyTorch Profiler (0)")});
  run.spans.push_back({0, 100, 0, 7, SpanKind::kDeviceAnnotation, run.strings.intern("forward")});
  run.spans.push_back({10, 40, 1, 1, SpanKind::kCpuOp, run.strings.intern("aten::mm")});
  run.spans.push_back({12, 20, 1, 1, SpanKind::kOther, run.strings.intern("marker")});  // kept: a host thread's
  Profile profile = build_profile(run);
  ASSERT_EQ(profile.threads.size(), 1u);
  const ThreadProfile& t = profile.threads[0];
  EXPECT_EQ(t.pid, 1);
  EXPECT_EQ(t.total_ns(), 30);
  EXPECT_EQ(find_stack(profile, t, {"aten::mm", "marker"}, run)->weight_ns, 8);
}

TEST(Profile, PartlyOverlappingSpanIsClippedToItsParent) {
  stepscope::Run run;
  run.spans.push_back({0, 10, 1, 1, SpanKind::kCpuOp, run.strings.intern("a")});
  run.spans.push_back({5, 15, 1, 1, SpanKind::kCpuOp, run.strings.intern("b")});
  Profile profile = build_profile(run);
  const ThreadProfile& t = profile.threads[0];
  EXPECT_EQ(find_stack(profile, t, {"a"}, run)->weight_ns, 5);
  EXPECT_EQ(find_stack(profile, t, {"a", "b"}, run)->weight_ns, 10);
}

// Two traces of the same loop number their steps differently; a profile
// that kept ProfilerStep#3 and ProfilerStep#13 apart would show every step as
// a function of its own, and compare them as removed and added.
TEST(Profile, ProfilerStepsShareOneFrameOnceTheImporterNamedTheirGroup) {
  stepscope::Run run;
  run.spans.push_back({0, 10, 1, 1, SpanKind::kUserRange, run.strings.intern("ProfilerStep#3")});
  run.spans.push_back({10, 30, 1, 1, SpanKind::kUserRange, run.strings.intern("ProfilerStep#4")});
  run.spans.push_back({12, 16, 1, 1, SpanKind::kCpuOp, run.strings.intern("aten::mm")});
  {
    Profile apart = build_profile(run);
    const ThreadProfile& t = apart.threads[0];
    EXPECT_EQ(find_stack(apart, t, {"ProfilerStep#3"}, run)->weight_ns, 10);
    EXPECT_EQ(find_stack(apart, t, {"ProfilerStep#4"}, run)->weight_ns, 16);
  }
  add_profiler_step_group(run.strings);
  Profile merged = build_profile(run);
  const ThreadProfile& t = merged.threads[0];
  EXPECT_EQ(t.stacks.size(), 2u);
  EXPECT_EQ(find_stack(merged, t, {"ProfilerStep*"}, run)->weight_ns, 26);
  EXPECT_EQ(find_stack(merged, t, {"ProfilerStep*", "aten::mm"}, run)->weight_ns, 4);
  EXPECT_EQ(find_stack(merged, t, {"ProfilerStep#3"}, run), nullptr);
}

TEST(Profile, EmptyRunGivesEmptyProfile) {
  stepscope::Run run;
  Profile profile = build_profile(run);
  EXPECT_EQ(profile.source, ProfileSource::kEmpty);
  EXPECT_TRUE(profile.threads.empty());
}

}  // namespace
}  // namespace stepscope
