// Steps of a torch.profiler trace, their phases by the documented
// definitions (docs/steps.md), worked out by hand on a small trace; the
// process roles of a trace; and the merging of ranks' findings.
#include <gtest/gtest.h>

#include <algorithm>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/process_summary.hpp"
#include "analyses/steps/steps.hpp"
#include "analyses/steps/trace_steps.hpp"

namespace {

using stepscope::SpanKind;
using stepscope::StepPhase;

constexpr int64_t kUs = 1000;
constexpr int64_t kPid = 40;
constexpr int64_t kMain = 41;
constexpr int64_t kEngine = 42;  // the autograd engine's thread

void span(stepscope::Run& run, int64_t tid, SpanKind kind, int64_t start_us, int64_t end_us, std::string_view name) {
  run.spans.push_back({start_us * kUs, end_us * kUs, kPid, tid, kind, run.strings.intern(name)});
}

// Five steps of 1000 us from 0; the last is cut short. In each step at t:
//   data wait   [t+0, t+300)  (the DataLoader range)
//   forward     ops [t+320, t+400) and [t+380, t+500) (overlapping: 180 us)
//   backward    engine ops on another thread [t+550, t+800), and a Backward
//               op on the main thread [t+780, t+820): union 270 us
//   optimizer   zero_grad [t+500, t+540), step [t+850, t+950), and an op
//               inside the step range (nested: counts once): 140 us
//   an op after the first backward op, [t+960, t+980): not forward, other
stepscope::Run five_step_trace() {
  stepscope::Run run;
  run.metadata["source_format"] = "chrome_trace";
  run.metadata["distributedInfo"] = R"({"backend": "nccl", "rank": 3, "world_size": 8})";
  run.add_process(kPid, "python train.py");
  for (int i = 0; i < 5; ++i) {
    int64_t t = i * 1000;
    span(run, kMain, SpanKind::kUserRange, t, i == 4 ? t + 200 : t + 1000, "ProfilerStep#" + std::to_string(i + 7));
    span(run, kMain, SpanKind::kUserRange, t, t + 300, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    span(run, kMain, SpanKind::kCpuOp, t + 100, t + 200, "aten::stack");  // inside the data wait
    span(run, kMain, SpanKind::kCpuOp, t + 320, t + 400, "aten::linear");
    span(run, kMain, SpanKind::kCpuOp, t + 380, t + 500, "aten::relu");
    span(run, kMain, SpanKind::kUserRange, t + 500, t + 540, "Optimizer.zero_grad#SGD.zero_grad");
    span(run, kEngine, SpanKind::kCpuOp, t + 550, t + 800, "autograd::engine::evaluate_function: AddmmBackward0");
    span(run, kMain, SpanKind::kCpuOp, t + 780, t + 820, "MulBackward0");
    span(run, kMain, SpanKind::kUserRange, t + 850, t + 950, "Optimizer.step#SGD.step");
    span(run, kMain, SpanKind::kCpuOp, t + 860, t + 900, "aten::add_");
    span(run, kMain, SpanKind::kCpuOp, t + 960, t + 980, "aten::item");
  }
  run.spans.push_back({0, 5000 * kUs, 0, 7, SpanKind::kKernel, run.strings.intern("gemm")});  // a device track
  run.add_process(0, "python train.py");
  run.add_process(-5, "Spans");
  run.spans.push_back({0, 10, -5, 0, SpanKind::kOther, run.strings.intern("PyTorch Profiler (0)")});
  return run;
}

int64_t phase(const stepscope::StepRecord& step, StepPhase p) { return step.phase_ns[static_cast<size_t>(p)]; }

TEST(TraceSteps, PhasesFollowTheDocumentedDefinitions) {
  stepscope::Run run = five_step_trace();
  std::vector<stepscope::TraceProcessSteps> found = stepscope::trace_steps(run);
  ASSERT_EQ(found.size(), 1u);
  const stepscope::TraceProcessSteps& p = found[0];
  EXPECT_EQ(p.pid, kPid);
  EXPECT_EQ(p.ranges, 5u);
  EXPECT_TRUE(p.last_left_out);
  EXPECT_EQ(p.loader_iterator, "_SingleProcessDataLoaderIter");
  ASSERT_EQ(p.steps.size(), 4u);
  for (const stepscope::StepRecord& step : p.steps) {
    EXPECT_EQ(step.time_ns(), 1000 * kUs);
    EXPECT_EQ(step.tid, kMain);
    EXPECT_EQ(phase(step, StepPhase::kDataWait), 300 * kUs);
    EXPECT_EQ(phase(step, StepPhase::kOptimizer), 140 * kUs);
    EXPECT_EQ(phase(step, StepPhase::kBackward), 270 * kUs);
    EXPECT_EQ(phase(step, StepPhase::kForward), 180 * kUs);
    EXPECT_EQ(phase(step, StepPhase::kOther), 110 * kUs);
    EXPECT_EQ(step.samples, -1);
  }
}

TEST(TraceSteps, StepsAnalysisUsesThemWithoutHookSteps) {
  stepscope::Run run = five_step_trace();
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(run);
  EXPECT_EQ(steps.origin, stepscope::StepsOrigin::kProfilerSteps);
  ASSERT_EQ(steps.processes.size(), 1u);
  const stepscope::ProcessSteps& p = steps.processes[0];
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.warmup_steps, 1u);
  EXPECT_FALSE(p.samples_per_sec);
  EXPECT_DOUBLE_EQ(p.phase_fractions[static_cast<size_t>(StepPhase::kDataWait)], 0.3);
  EXPECT_DOUBLE_EQ(p.step_time.mean_ms, 1.0);

  // Hook steps, when there are any, come first.
  run.spans.push_back({0, 900 * kUs, kPid, kMain, SpanKind::kStep, run.strings.intern("step")});
  EXPECT_EQ(stepscope::analyze_steps(run).origin, stepscope::StepsOrigin::kHooks);
}

TEST(TraceSteps, OneRangeIsKeptAndNoRangesMeanNoSteps) {
  stepscope::Run run;
  span(run, kMain, SpanKind::kUserRange, 0, 500, "ProfilerStep#1009");
  auto found = stepscope::trace_steps(run);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].last_left_out);
  EXPECT_EQ(found[0].steps.size(), 1u);
  EXPECT_EQ(phase(found[0].steps[0], StepPhase::kOther), 500 * kUs);

  stepscope::Run none;
  span(none, kMain, SpanKind::kUserRange, 0, 500, "ProfilerStep#x");  // not a step number
  EXPECT_TRUE(stepscope::trace_steps(none).empty());
  EXPECT_EQ(stepscope::analyze_steps(none).origin, stepscope::StepsOrigin::kNone);
}

TEST(TraceSteps, AMultiprocessingLoaderHasWorkersOfUnknownNumber) {
  stepscope::Run run;
  for (int i = 0; i < 6; ++i) {
    int64_t t = i * 1000;
    span(run, kMain, SpanKind::kUserRange, t, t + 1000, "ProfilerStep#" + std::to_string(i));
    span(run, kMain, SpanKind::kUserRange, t, t + 400, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  }
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(run);
  std::vector<stepscope::ProcessSummary> processes;
  stepscope::Diagnosis d = stepscope::diagnose({run, steps, processes});
  ASSERT_FALSE(d.findings.empty());
  const stepscope::Finding& f = d.findings[0];
  EXPECT_EQ(f.id, "input_bound");
  EXPECT_DOUBLE_EQ(f.share, 0.4);
  EXPECT_EQ(f.recommendation.rfind("Raise num_workers and set persistent_workers=True", 0), 0u) << f.recommendation;
  EXPECT_NE(std::find(f.evidence.begin(), f.evidence.end(),
                      "DataLoader workers: some (the trace's iterator is _MultiProcessingDataLoaderIter; a trace does "
                      "not say how many)"),
            f.evidence.end());
}

TEST(ProcessRoles, DevicesAndKinetoTracksAreNoHostProcesses) {
  stepscope::Run run = five_step_trace();
  std::vector<stepscope::ProcessSummary> processes = stepscope::summarize_processes(run);
  ASSERT_EQ(processes.size(), 3u);
  EXPECT_EQ(processes[0].role, stepscope::ProcessRole::kHost);
  EXPECT_EQ(processes[0].threads, 2u);  // the main thread and the engine's
  EXPECT_EQ(processes[1].role, stepscope::ProcessRole::kDevice);
  EXPECT_EQ(processes[1].threads, 1u);
  EXPECT_EQ(processes[2].role, stepscope::ProcessRole::kTraceTrack);

  // A recorded run's process without samples or spans is still a process.
  run.metadata.erase("source_format");
  EXPECT_EQ(stepscope::summarize_processes(run)[2].role, stepscope::ProcessRole::kHost);
}

stepscope::Finding finding(std::string id, std::optional<double> speedup, std::string evidence) {
  stepscope::Finding f;
  f.id = std::move(id);
  f.expected_speedup = speedup;
  f.evidence.push_back(std::move(evidence));
  return f;
}

TEST(RankDiagnoses, SameRuleMergesWithTheRanksAndTheWorstFigures) {
  stepscope::Diagnosis r0, r1;
  r0.findings = {finding("gpu_idle", 1.5, "idle 33% on rank 0"), finding("small_memcpy", 1.1, "r0 copies")};
  r1.findings = {finding("gpu_idle", 2.0, "idle 50% on rank 1")};
  r0.note = "first";
  stepscope::Diagnosis merged = stepscope::merge_rank_diagnoses({{"rank 0", r0}, {"rank 1", r1}});
  ASSERT_EQ(merged.findings.size(), 2u);
  const stepscope::Finding& idle = merged.findings[0];
  EXPECT_EQ(idle.id, "gpu_idle");
  EXPECT_EQ(idle.ranks, (std::vector<std::string>{"rank 0", "rank 1"}));
  EXPECT_EQ(*idle.expected_speedup, 2.0);
  ASSERT_EQ(idle.evidence.size(), 2u);
  EXPECT_EQ(idle.evidence[0],
            "found on 2 of 2 ranks (rank 0, rank 1); the figures below are of rank 1, where the bound is highest");
  EXPECT_EQ(idle.evidence[1], "idle 50% on rank 1");
  const stepscope::Finding& copies = merged.findings[1];
  EXPECT_EQ(copies.ranks, (std::vector<std::string>{"rank 0"}));
  EXPECT_EQ(copies.evidence[0], "found on rank 0 only, of 2 ranks");
  EXPECT_EQ(merged.note, "first");
}

}  // namespace
