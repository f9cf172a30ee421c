#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "analyses/device/activity.hpp"

namespace stepscope {
namespace {

// The launch of each device span by brute force: the first runtime call in
// trace order with its correlation, kNoLaunch without one.
SpanId first_call_with(const stepscope::Run& run, int64_t correlation) {
  if (correlation == 0) return kNoLaunch;
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& s = run.spans[i];
    if (s.kind == SpanKind::kRuntimeCall && s.correlation == correlation) return i;
  }
  return kNoLaunch;
}

void expect_launches_found(const stepscope::Run& run) {
  DeviceLaunches launches(run);
  size_t device = 0;
  for (const LaunchedActivity& a : launches.activity()) {
    EXPECT_TRUE(is_device_activity(run.spans[a.span].kind));
    EXPECT_EQ(a.launch, first_call_with(run, run.spans[a.span].correlation)) << "device span " << a.span;
    if (device > 0) {
      EXPECT_GT(a.span, launches.activity()[device - 1].span) << "not in trace order";
    }
    ++device;
  }
  EXPECT_EQ(device, static_cast<size_t>(std::count_if(run.spans.begin(), run.spans.end(),
                                                      [](const Span& s) { return is_device_activity(s.kind); })));
}

Span call(int64_t correlation) { return {.kind = SpanKind::kRuntimeCall, .correlation = correlation}; }
Span kernel(int64_t correlation) { return {.kind = SpanKind::kKernel, .correlation = correlation}; }

TEST(DeviceLaunches, EachActivityFindsTheFirstCallWithItsCorrelation) {
  stepscope::Run run;
  for (Span s : {call(5), call(3), kernel(3), call(9), call(3), kernel(5), kernel(0), kernel(7), call(1),
                 kernel(9), kernel(1), Span{.kind = SpanKind::kMemcpy, .correlation = 9}, kernel(12), kernel(2)}) {
    run.spans.push_back(s);
  }
  expect_launches_found(run);
}

// Calls almost in correlation order with some out of place, sparse numbers,
// activity in every order: the searches that start from the last answer
// must find what a full search finds.
TEST(DeviceLaunches, OutOfPlaceCallsAndActivityInAnyOrder) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> chance(0, 99);
  stepscope::Run run;
  for (int64_t c = 1; c < 3000; ++c) {
    int64_t correlation = c * 1000 + (chance(random) < 5 ? -5000 : 0);  // a few behind their place
    run.spans.push_back(call(correlation));
    if (chance(random) < 30) run.spans.push_back(call(correlation));  // repeated: the first counts
    int roll = chance(random);
    if (roll < 60) run.spans.push_back(kernel(correlation));
    if (roll >= 60 && roll < 70) run.spans.push_back(kernel(c * 1000 + 1));                    // no such call
    if (roll >= 70 && roll < 80) run.spans.push_back(kernel((3000 - c) * 1000));               // far behind
    if (roll >= 80 && roll < 85) run.spans.push_back(kernel(std::uniform_int_distribution<int64_t>(0, 3'000'000)(random)));
  }
  expect_launches_found(run);
}

TEST(DeviceLaunches, NoCallsNoLaunches) {
  stepscope::Run run;
  run.spans.push_back(kernel(4));
  expect_launches_found(run);
}

}  // namespace
}  // namespace stepscope
