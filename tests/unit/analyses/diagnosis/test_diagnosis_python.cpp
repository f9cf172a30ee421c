// python_overhead on hand-made traces whose shares are worked out by hand
// (docs/diagnosis.md, "python_overhead").
#include <gtest/gtest.h>

#include <algorithm>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/steps/steps.hpp"

namespace {

using stepscope::SpanKind;

constexpr int64_t kUs = 1000;
constexpr int64_t kPid = 7;
constexpr int64_t kMain = 8;

void span(stepscope::Run& run, int64_t pid, int64_t tid, SpanKind kind, int64_t start_us, int64_t end_us,
          std::string_view name) {
  run.spans.push_back({start_us * kUs, end_us * kUs, pid, tid, kind, run.strings.intern(name)});
}

// 12 steps of 1000 us (11 complete, 10 steady). Each: one 400 us matmul,
// then 120 operators of 3 us each 2 us apart (the last gap reaching the
// step's end): tiny operators 360 us, gaps 240 us, so 60% is overhead. One
// Python function around the whole step (with_stack).
stepscope::Run tiny_op_trace() {
  stepscope::Run run;
  for (int i = 0; i < 12; ++i) {
    int64_t t = i * 1000;
    span(run, kPid, kMain, SpanKind::kUserRange, t, t + 1000, "ProfilerStep#" + std::to_string(i));
    span(run, kPid, kMain, SpanKind::kPythonFunction, t, t + 1000, "train.py(10): step");
    span(run, kPid, kMain, SpanKind::kCpuOp, t, t + 400, "aten::mm");
    for (int k = 0; k < 120; ++k) span(run, kPid, kMain, SpanKind::kCpuOp, t + 400 + 5 * k, t + 403 + 5 * k, "aten::mul");
  }
  return run;
}

std::optional<stepscope::Finding> python_finding(const stepscope::Run& run) {
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(run);
  std::vector<stepscope::ProcessSummary> processes;
  stepscope::Diagnosis d = stepscope::diagnose({run, steps, processes});
  auto it = std::find_if(d.findings.begin(), d.findings.end(),
                         [](const stepscope::Finding& f) { return f.id == "python_overhead"; });
  if (it == d.findings.end()) return std::nullopt;
  return *it;
}

bool any_contains(const std::vector<std::string>& lines, std::string_view text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

TEST(PythonOverhead, OnTheCpuTheOverheadShareOfStepTime) {
  auto f = python_finding(tiny_op_trace());
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.6, 1e-9);
  EXPECT_NEAR(*f->expected_speedup, 2.5, 1e-9);
  EXPECT_TRUE(any_contains(f->evidence, "121 top-level operators per step, median 3.0 us each (10 steady steps of 1.0 ms")) << f->evidence[0];
  EXPECT_TRUE(any_contains(f->evidence, "24% is spent between operators")) << f->evidence[1];
  EXPECT_TRUE(any_contains(f->evidence, "36% in operators shorter than 20 us"));
  EXPECT_TRUE(any_contains(f->evidence, "no device activity in the trace"));
  EXPECT_TRUE(any_contains(f->evidence, "train.py(10): step 100%"));
}

TEST(PythonOverhead, ABusyDeviceHidesTheHostsOverhead) {
  stepscope::Run run = tiny_op_trace();
  for (int i = 0; i < 12; ++i) span(run, 0, 7, SpanKind::kKernel, i * 1000, i * 1000 + 700, "gemm");  // busy 70%
  auto f = python_finding(run);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.3, 1e-9);  // the device idles 30%: the most removing overhead can win
  EXPECT_TRUE(any_contains(f->evidence, "the device is busy 70% of step time"));
  for (int i = 0; i < 12; ++i) span(run, 0, 8, SpanKind::kKernel, i * 1000 + 700, i * 1000 + 900, "gemm");
  EXPECT_FALSE(python_finding(run));  // idle 10%: below the threshold
}

// Steps of 5000 us holding `ops` operators of `op_us` each, 5 us apart.
stepscope::Run uniform_trace(int ops, int64_t op_us) {
  stepscope::Run run;
  for (int i = 0; i < 12; ++i) {
    int64_t t = i * 5000;
    span(run, kPid, kMain, SpanKind::kUserRange, t, t + 5000, "ProfilerStep#" + std::to_string(i));
    for (int k = 0; k < ops; ++k) {
      int64_t start = t + k * (op_us + 5);
      span(run, kPid, kMain, SpanKind::kCpuOp, start, start + op_us, "aten::add");
    }
  }
  return run;
}

TEST(PythonOverhead, QuietWithFewOrLargeOperatorsOrAMissingDevice) {
  EXPECT_TRUE(python_finding(uniform_trace(150, 3)));    // the same shape fires with tiny operators...
  EXPECT_FALSE(python_finding(uniform_trace(150, 25)));  // ...not when the median is 25 us
  EXPECT_FALSE(python_finding(uniform_trace(90, 3)));    // ...nor with under 100 per step

  stepscope::Run missing = tiny_op_trace();  // launches but no kernels: the device side is lost
  span(missing, kPid, kMain, SpanKind::kRuntimeCall, 0, 5, "cudaLaunchKernel");
  EXPECT_FALSE(python_finding(missing));
}

}  // namespace
