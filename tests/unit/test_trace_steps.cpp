// Steps of a torch.profiler trace, their phases by the documented
// definitions (docs/steps.md), worked out by hand on a small trace; the
// process roles of a trace; and the merging of ranks' findings.
#include <gtest/gtest.h>

#include "analyses/process_summary.hpp"

namespace {

using stepscope::SpanKind;

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

}  // namespace
