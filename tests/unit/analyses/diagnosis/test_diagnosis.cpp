// The diagnosis rules on hand-made runs: each rule fires on a run that shows
// its mechanism and stays quiet on one that does not; findings rank by
// their Amdahl bound; renderers write them escaped.
#include <functional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <simdjson.h>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/report.hpp"
#include "renderers/report/json.hpp"
#include "renderers/report/text.hpp"

namespace {

using stepscope::Finding;
using stepscope::FrameId;
using stepscope::SpanKind;
using stepscope::ThreadState;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kPid = 1;
constexpr int64_t kPeriodMs = 1;

// A training process (pid 1, thread 1) whose steps have the phases given,
// sampled every millisecond, with system counters on request.
struct RunBuilder {
  stepscope::Run run;
  std::map<std::pair<std::string, int64_t>, uint32_t> tracks;
  FrameId loop = 0;

  RunBuilder() {
    run.metadata["sample_period_ns"] = std::to_string(kPeriodMs * kMs);
    run.add_process(kPid, "python train.py");
    loop = run.intern_frame("train", "train.py", 10);
  }

  void span(int64_t pid, SpanKind kind, int64_t start_ms, int64_t end_ms, std::string_view name = "x") {
    run.spans.push_back({start_ms * kMs, end_ms * kMs, pid, pid, kind, run.strings.intern(name)});
  }
  void counter(const std::string& name, int64_t pid, int64_t ts_ms, double value) {
    auto [it, added] = tracks.try_emplace({name, pid}, static_cast<uint32_t>(run.counter_tracks.size()));
    if (added) run.counter_tracks.push_back({run.strings.intern(name), pid, run.strings.intern("")});
    run.counter_values.push_back({it->second, ts_ms * kMs, value});
  }
  void samples(int32_t pid, int64_t start_ms, int64_t end_ms, const std::vector<FrameId>& stack,
               ThreadState state = ThreadState::kRunning) {
    stepscope::StackId id = run.stacks.intern(stack);
    for (int64_t t = start_ms; t < end_ms; t += kPeriodMs) run.samples.push_back({t * kMs, pid, pid, id, state});
  }
  // `count` steps of `wait + fwd + bwd + opt` ms each, sampled in `loop`;
  // returns the end.
  int64_t steps(int count, int64_t wait, int64_t fwd, int64_t bwd, int64_t opt) {
    int64_t t = 0;
    for (int i = 0; i < count; ++i) {
      int64_t start = t;
      span(kPid, SpanKind::kDataWait, start, start + wait);
      span(kPid, SpanKind::kForward, start + wait, start + wait + fwd);
      span(kPid, SpanKind::kBackward, start + wait + fwd, start + wait + fwd + bwd);
      span(kPid, SpanKind::kOptimizer, start + wait + fwd + bwd, start + wait + fwd + bwd + opt);
      t = start + wait + fwd + bwd + opt;
      span(kPid, SpanKind::kStep, start, t, "step");
    }
    samples(kPid, 0, t, {loop});
    return t;
  }
  // Two cores, busy at these percents, every 10 ms until `end_ms`.
  void cores(int64_t end_ms, double core0, double core1) {
    for (int64_t t = 0; t < end_ms; t += 10) {
      counter("cpu.0.percent", 0, t, core0);
      counter("cpu.1.percent", 0, t, core1);
    }
  }
  // A DataLoader worker process with batches through the run.
  void worker(int32_t pid, int64_t end_ms, ThreadState state, double cpu_percent) {
    run.add_process(pid, "python train.py", kPid);
    span(pid, SpanKind::kOther, 0, end_ms, "worker_batch");
    samples(pid, 0, end_ms, {run.intern_frame("__getitem__", "data.py", 5)}, state);
    for (int64_t t = 0; t < end_ms; t += 10) counter("process.cpu_percent", pid, t, cpu_percent);
  }
  // Replaces the stack of the step thread's samples in [start, end) of every step.
  void restack_in_steps(int count, int64_t step_ms, int64_t from_ms, int64_t to_ms, const std::vector<FrameId>& stack) {
    stepscope::StackId id = run.stacks.intern(stack);
    for (auto& s : run.samples) {
      if (s.pid != kPid) continue;
      int64_t in_step = (s.ts_ns / kMs) % step_ms;
      if (s.ts_ns / kMs < count * step_ms && in_step >= from_ms && in_step < to_ms) s.stack = id;
    }
  }

  stepscope::Diagnosis diagnose() {
    steps_ = stepscope::analyze_steps(run);
    processes_ = stepscope::summarize_processes(run);
    return stepscope::diagnose({run, steps_, processes_});
  }

 private:
  stepscope::StepsAnalysis steps_;
  std::vector<stepscope::ProcessSummary> processes_;
};

const Finding* find(const stepscope::Diagnosis& d, std::string_view id) {
  for (const Finding& f : d.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

bool any_contains(const std::vector<std::string>& texts, std::string_view needle) {
  for (const auto& t : texts) {
    if (t.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(Diagnosis, AmdahlAndSeverity) {
  EXPECT_DOUBLE_EQ(stepscope::amdahl_speedup(0.5), 2.0);
  EXPECT_DOUBLE_EQ(stepscope::amdahl_speedup(0), 1.0);
  EXPECT_NEAR(stepscope::amdahl_speedup(1), 100.0, 1e-9);  // clamped, finite
  EXPECT_EQ(stepscope::severity_for_speedup(1.6), stepscope::Severity::kHigh);
  EXPECT_EQ(stepscope::severity_for_speedup(1.2), stepscope::Severity::kMedium);
  EXPECT_EQ(stepscope::severity_for_speedup(1.05), stepscope::Severity::kLow);
}

TEST(Diagnosis, RankedByExpectedSpeedupRisksLast) {
  std::vector<Finding> findings(3);
  findings[0].id = "risk";
  findings[0].severity = stepscope::Severity::kHigh;
  findings[1].id = "small";
  findings[1].expected_speedup = 1.2;
  findings[2].id = "big";
  findings[2].expected_speedup = 2.5;
  stepscope::rank_findings(findings);
  EXPECT_EQ(findings[0].id, "big");
  EXPECT_EQ(findings[1].id, "small");
  EXPECT_EQ(findings[2].id, "risk");
}

TEST(Diagnosis, NoStepsNoTimeFindings) {
  RunBuilder b;
  auto d = b.diagnose();
  EXPECT_TRUE(d.findings.empty());
  EXPECT_NE(d.note.find("no steps"), std::string::npos);
}

TEST(Diagnosis, CleanComputeBoundStepSaysWhereItsTimeGoes) {
  RunBuilder b;
  b.steps(20, 2, 40, 50, 8);
  auto d = b.diagnose();
  EXPECT_TRUE(d.findings.empty());
  EXPECT_EQ(d.note,
            "compute-bound: forward and backward take 90%, the optimizer 8%, data wait 2%, other 0% of step time; "
            "no rule found overhead to remove (a faster model, precision or device shortens it)");
}

TEST(Diagnosis, InputBoundWithoutWorkersAndAnIdleCore) {
  RunBuilder b;
  int64_t end = b.steps(20, 50, 20, 20, 10);  // data wait 50 of 100 ms
  b.cores(end, 100, 0);                        // one core idle
  b.restack_in_steps(20, 100, 0, 50, {b.loop, b.run.intern_frame("tokenize", "data.py", 42)});
  auto d = b.diagnose();
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.id, "input_bound");
  EXPECT_NEAR(f.share, 0.5, 1e-9);
  ASSERT_TRUE(f.expected_speedup);
  EXPECT_NEAR(*f.expected_speedup, 2.0, 1e-9);  // 1/(1-0.5), and 2 cores / 1 busy
  EXPECT_EQ(f.severity, stepscope::Severity::kHigh);
  EXPECT_NE(f.recommendation.find("num_workers=1"), std::string::npos) << f.recommendation;
  EXPECT_TRUE(any_contains(f.evidence, "tokenize (data.py) 100%")) << f.evidence[1];
  EXPECT_TRUE(any_contains(f.evidence, "num_workers=0"));
  EXPECT_TRUE(any_contains(f.evidence, "idle cores: 1.0 of 2"));
}

TEST(Diagnosis, InputBoundSpeedupCappedByBusyCores) {
  RunBuilder b;
  int64_t end = b.steps(20, 80, 10, 5, 5);  // data wait 80%: Amdahl 5x
  b.cores(end, 100, 60);                     // 1.6 cores busy of 2: at most 1.25x
  auto d = b.diagnose();
  const Finding* f = find(d, "input_bound");
  ASSERT_TRUE(f);
  EXPECT_NEAR(*f->expected_speedup, 2 / 1.6, 1e-9);

  // On a shared machine other load fills the cores; the bound is the job's:
  // 2 cores / the 1 core this job keeps busy.
  RunBuilder shared;
  end = shared.steps(20, 80, 10, 5, 5);
  shared.cores(end, 100, 100);
  for (int64_t t = 0; t < end; t += 10) shared.counter("process.cpu_percent", kPid, t, 100);
  auto ds = shared.diagnose();
  f = find(ds, "input_bound");
  ASSERT_TRUE(f);
  EXPECT_NEAR(*f->expected_speedup, 2.0, 1e-9);
  EXPECT_TRUE(any_contains(f->evidence, "idle cores: 0.0 of 2 on average during steady steps; this job used 1.0 cores"));
}

TEST(Diagnosis, NoInputFindingBelowThreshold) {
  RunBuilder b;
  int64_t end = b.steps(20, 5, 45, 40, 10);  // data wait 5%
  b.cores(end, 100, 0);
  auto d = b.diagnose();
  EXPECT_FALSE(find(d, "input_bound"));
  EXPECT_FALSE(find(d, "dataloader_workers_saturated"));
  EXPECT_FALSE(find(d, "io_bound_workers"));
}

TEST(Diagnosis, WorkersSaturatedWhenNoCoreIsIdle) {
  RunBuilder b;
  int64_t end = b.steps(20, 40, 30, 20, 10);
  b.cores(end, 98, 97);
  b.worker(2, end, ThreadState::kRunning, 99);
  b.worker(3, end, ThreadState::kRunning, 98);
  auto d = b.diagnose();
  EXPECT_FALSE(find(d, "input_bound"));
  const Finding* f = find(d, "dataloader_workers_saturated");
  ASSERT_TRUE(f);
  EXPECT_NEAR(*f->expected_speedup, 1 / 0.6, 1e-9);
  EXPECT_TRUE(any_contains(f->evidence, "2 processes, using 1.97 cores"));
  EXPECT_TRUE(any_contains(f->evidence, "__getitem__ (data.py)"));
}

// Two workers on two cores that still leave idle time: more workers would
// not add parallelism, so the wait is the workers' saturation, not input_bound.
TEST(Diagnosis, AsManyWorkersAsCoresAreSaturatedEvenWithIdleTime) {
  RunBuilder b;
  int64_t end = b.steps(20, 40, 30, 20, 10);
  b.cores(end, 60, 50);
  b.worker(2, end, ThreadState::kRunning, 40);
  b.worker(3, end, ThreadState::kRunning, 40);
  auto d = b.diagnose();
  EXPECT_FALSE(find(d, "input_bound"));
  const Finding* f = find(d, "dataloader_workers_saturated");
  ASSERT_TRUE(f);
  EXPECT_NE(f->recommendation.find("as many workers as cores"), std::string::npos) << f->recommendation;
}

TEST(Diagnosis, WorkersWithIdleCoresAreInputBound) {
  RunBuilder b;
  int64_t end = b.steps(20, 40, 30, 20, 10);
  b.cores(end, 100, 0);
  b.worker(2, end, ThreadState::kRunning, 50);
  auto d = b.diagnose();
  const Finding* f = find(d, "input_bound");
  ASSERT_TRUE(f);
  EXPECT_NE(f->recommendation.find("Raise num_workers from 1 to about 2"), std::string::npos) << f->recommendation;
}

TEST(Diagnosis, IoBoundWorkersInDiskWait) {
  RunBuilder b;
  int64_t end = b.steps(20, 60, 20, 10, 10);
  b.cores(end, 30, 10);
  b.worker(2, end, ThreadState::kDiskWait, 10);
  for (int64_t t = 0; t < end; t += 10) b.counter("disk.sda.util_percent", 0, t, 97);
  auto d = b.diagnose();
  EXPECT_FALSE(find(d, "input_bound"));
  const Finding* f = find(d, "io_bound_workers");
  ASSERT_TRUE(f);
  EXPECT_TRUE(any_contains(f->evidence, "100% of the loaders' busy samples are in disk wait"));
  EXPECT_TRUE(any_contains(f->evidence, "busiest disk sda: 97% utilized"));
}

TEST(Diagnosis, LoggingOverheadWithCallSite) {
  RunBuilder b;
  b.steps(20, 0, 40, 40, 20);
  FrameId site = b.run.intern_frame("log_metrics", "train.py", 77);
  FrameId emit = b.run.intern_frame("emit", "/usr/lib/python3.11/logging/__init__.py", 1100);
  b.restack_in_steps(20, 100, 80, 100, {b.loop, site, emit});  // 20% of every step
  auto d = b.diagnose();
  const Finding* f = find(d, "logging_overhead");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.2, 0.02);
  EXPECT_TRUE(any_contains(f->evidence, "called from log_metrics (train.py:77) (100% of these samples)"))
      << f->evidence.back();
}

TEST(Diagnosis, NoLoggingFindingForUserCode) {
  RunBuilder b;
  b.steps(20, 0, 40, 40, 20);
  b.restack_in_steps(20, 100, 80, 100, {b.loop, b.run.intern_frame("log_like_name", "mylogging.py", 1)});
  EXPECT_FALSE(find(b.diagnose(), "logging_overhead"));
}

// 20 steps of 100 ms: forward 30, backward 20, optimizer 10, then 40 ms of
// other, whose samples have `other_stack`.
void steps_with_other(RunBuilder& b, const std::vector<FrameId>& other_stack) {
  for (int64_t start = 0; start < 2000; start += 100) {
    b.span(kPid, SpanKind::kForward, start, start + 30);
    b.span(kPid, SpanKind::kBackward, start + 30, start + 50);
    b.span(kPid, SpanKind::kOptimizer, start + 50, start + 60);
    b.span(kPid, SpanKind::kStep, start, start + 100, "step");
  }
  b.samples(kPid, 0, 2000, {b.loop});
  b.restack_in_steps(20, 100, 60, 100, other_stack);
}

TEST(Diagnosis, StepOverheadNamesTheFunctionsAndTheirKind) {
  RunBuilder b;
  FrameId save = b.run.intern_frame("save_checkpoint", "train.py", 88);
  FrameId torch_save = b.run.intern_frame("_save", "/x/torch/serialization.py", 600);
  steps_with_other(b, {b.loop, save, torch_save});
  auto d = b.diagnose();
  const Finding* f = find(d, "step_overhead");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.4, 0.02);
  EXPECT_NEAR(*f->expected_speedup, 1 / 0.6, 0.05);
  EXPECT_TRUE(any_contains(f->evidence, "_save (/x/torch/serialization.py:600) called from save_checkpoint (train.py:88) (100%)"))
      << f->evidence[1];
  EXPECT_TRUE(any_contains(f->evidence, "100% of these samples save checkpoints"));
  EXPECT_NE(f->recommendation.find("async_save"), std::string::npos);
  EXPECT_EQ(f->recommendation.find("evaluation"), std::string::npos);
}

// With native frames (record --native) the leaf is native code: its call site
// is the Python line that called into it, not the native caller.
TEST(Diagnosis, StepOverheadNamesThePythonCallSiteOfNativeCode) {
  RunBuilder b;
  FrameId log = b.run.intern_frame("log_metrics", "train.py", 77);
  FrameId item = b.run.intern_frame("THPVariable_item", "/x/libtorch_python.so", 0, stepscope::FrameKind::kNative);
  FrameId copy = b.run.intern_frame("at::native::copy_", "/x/libtorch_cpu.so", 0, stepscope::FrameKind::kNative);
  steps_with_other(b, {b.loop, log, item, copy});
  auto d = b.diagnose();
  const Finding* f = find(d, "step_overhead");
  ASSERT_TRUE(f);
  EXPECT_TRUE(any_contains(f->evidence, "at::native::copy_ (libtorch_cpu.so) called from log_metrics (train.py:77) (100%)"))
      << f->evidence[1];
}

// record --native: in forward (30 of each 100 ms step) the innermost frame is
// the interpreter's for 25 ms, libtorch's for 5; backward and the optimizer
// (and the rest of the step) run libtorch throughout.
void native_steps(RunBuilder& b, FrameId interpreter_leaf) {
  b.run.metadata["native_stacks"] = "1";
  FrameId forward = b.run.intern_frame("forward", "model.py", 12);
  FrameId matmul = b.run.intern_frame("at::native::addmm", "/x/libtorch_cpu.so", 0, stepscope::FrameKind::kNative);
  steps_with_other(b, {b.loop});
  b.restack_in_steps(20, 100, 0, 25, {b.loop, forward, interpreter_leaf});
  b.restack_in_steps(20, 100, 25, 100, {b.loop, forward, matmul});
}

TEST(Diagnosis, PythonOverheadOnARecordingWithNativeFrames) {
  RunBuilder b;
  native_steps(b, b.run.intern_frame("_PyEval_Vector", "/usr/lib/libpython3.11.so.1.0", 0, stepscope::FrameKind::kNative));
  auto d = b.diagnose();
  const Finding* f = find(d, "python_overhead");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.25, 0.02);
  EXPECT_TRUE(any_contains(f->evidence, "42% ran the interpreter")) << f->evidence[0];
  EXPECT_TRUE(any_contains(f->evidence, "forward (model.py:12) (100%)"));
  EXPECT_TRUE(any_contains(f->evidence, "libtorch_cpu.so (100%)"));
}

TEST(Diagnosis, NoPythonOverheadWhenOperatorsTakeTheTime) {
  RunBuilder b;
  native_steps(b, b.run.intern_frame("at::native::relu", "/x/libtorch_cpu.so", 0, stepscope::FrameKind::kNative));
  EXPECT_FALSE(find(b.diagnose(), "python_overhead"));
  RunBuilder python_only;  // without native frames a sample cannot tell
  steps_with_other(python_only, {python_only.loop});
  EXPECT_FALSE(find(python_only.diagnose(), "python_overhead"));
}

// Evaluation the hooks marked (an "evaluation" span) is evaluation whatever its
// functions are called: the remedy moves it out of the step.
TEST(Diagnosis, StepOverheadNamesMarkedEvaluation) {
  RunBuilder b;
  FrameId score = b.run.intern_frame("score_holdout", "train.py", 120);
  steps_with_other(b, {b.loop, score});
  for (int64_t start = 0; start < 2000; start += 100) {
    b.span(kPid, SpanKind::kOther, start + 60, start + 90, "evaluation");  // 30 of the 40 ms
  }
  auto d = b.diagnose();
  const Finding* f = find(d, "step_overhead");
  ASSERT_TRUE(f);
  EXPECT_TRUE(any_contains(f->evidence, "75% of these samples evaluate")) << f->evidence.back();
  EXPECT_NE(f->recommendation.find("Move evaluation out of the step"), std::string::npos);
}

// What logging_overhead names is its own: step_overhead counts only the rest.
TEST(Diagnosis, StepOverheadLeavesLoggingToItsRule) {
  RunBuilder b;
  FrameId emit = b.run.intern_frame("emit", "/usr/lib/python3.11/logging/__init__.py", 1100);
  steps_with_other(b, {b.loop, b.run.intern_frame("log_metrics", "train.py", 77), emit});
  b.restack_in_steps(20, 100, 90, 100, {b.loop, b.run.intern_frame("evaluate", "train.py", 50)});
  auto d = b.diagnose();
  const Finding* logging = find(d, "logging_overhead");
  ASSERT_TRUE(logging);
  EXPECT_NEAR(logging->share, 0.3, 0.02);
  EXPECT_FALSE(find(d, "step_overhead"));  // 10% left: under the threshold
}

// Explicit steps of a loop without torch measure no phase: "other" is not the
// rest of anything, and step_overhead says nothing.
TEST(Diagnosis, NoStepOverheadWithoutMeasuredPhases) {
  RunBuilder b;
  for (int64_t start = 0; start < 2000; start += 100) b.span(kPid, SpanKind::kStep, start, start + 100, "step");
  b.samples(kPid, 0, 2000, {b.loop, b.run.intern_frame("work", "loop.py", 3)});
  EXPECT_FALSE(find(b.diagnose(), "step_overhead"));
}

TEST(Diagnosis, OptimizerHeavyNamesTheForLoopImplementation) {
  RunBuilder b;
  b.steps(20, 0, 30, 30, 40);
  FrameId impl = b.run.intern_frame("_single_tensor_adamw", "/x/torch/optim/adamw.py", 300);
  b.restack_in_steps(20, 100, 60, 100, {b.loop, impl});
  auto d = b.diagnose();
  const Finding* f = find(d, "optimizer_heavy");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.4, 1e-9);
  EXPECT_TRUE(any_contains(f->evidence, "for-loop implementation (_single_tensor_adamw)"));
  EXPECT_NE(f->recommendation.find("fused=True"), std::string::npos);
  RunBuilder light;
  light.steps(20, 0, 45, 45, 10);
  EXPECT_FALSE(find(light.diagnose(), "optimizer_heavy"));
}

TEST(Diagnosis, GcPausesFromMarkerFrames) {
  RunBuilder b;
  b.steps(20, 0, 50, 40, 10);
  FrameId gc = b.run.intern_frame("<GC>", "", 0, stepscope::FrameKind::kMarker);
  b.restack_in_steps(20, 100, 0, 10, {b.loop, gc});
  auto d = b.diagnose();
  const Finding* f = find(d, "gc_pauses");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.1, 0.01);
  RunBuilder quiet;
  quiet.steps(20, 0, 50, 40, 10);
  EXPECT_FALSE(find(quiet.diagnose(), "gc_pauses"));
}

TEST(Diagnosis, GcPausesFromTimedCollections) {
  RunBuilder b;
  b.steps(20, 0, 50, 40, 10);
  for (int i = 0; i < 20; ++i) b.span(kPid, SpanKind::kOther, i * 100 + 60, i * 100 + 68, "gc_pause");
  b.span(2, SpanKind::kOther, 0, 2000, "gc_pause");  // another process: not the step's
  auto d = b.diagnose();
  const Finding* f = find(d, "gc_pauses");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.08, 1e-9);  // the 18 steady steps' 8 ms of 100
  EXPECT_TRUE(any_contains(f->evidence, "18 collections on the step thread during steady steps, 144.0 ms in all, "
                                        "the longest 8.0 ms"))
      << f->evidence[0];
  RunBuilder brief;
  brief.steps(20, 0, 50, 40, 10);
  for (int i = 0; i < 20; ++i) brief.span(kPid, SpanKind::kOther, i * 100 + 60, i * 100 + 62, "gc_pause");
  EXPECT_FALSE(find(brief.diagnose(), "gc_pauses"));  // 2%
}

// A trace of 10 ProfilerStep ranges of 10 ms on host thread 5 of process 5;
// `each_step(span, t)` adds the rest of the step that starts at t ms, with
// `span(tid, kind, start_ms, end_ms, name)`.
using AddSpan = std::function<void(int64_t, SpanKind, double, double, std::string_view)>;
stepscope::Run profiler_step_trace(const std::function<void(const AddSpan&, double)>& each_step) {
  stepscope::Run run;
  AddSpan span = [&](int64_t tid, SpanKind kind, double start_ms, double end_ms, std::string_view name) {
    run.spans.push_back({static_cast<int64_t>(start_ms * kMs), static_cast<int64_t>(end_ms * kMs), 5, tid, kind,
                         run.strings.intern(name)});
  };
  for (int i = 0; i < 10; ++i) {
    double t = i * 10.0;
    span(5, SpanKind::kUserRange, t, t + 10, "ProfilerStep#" + std::to_string(i));
    each_step(span, t);
  }
  return run;
}

// Each step launches device work for 0-4 ms, then calls .item() (a sync from
// 4 to 6 ms while the device finishes at 5 ms), and the device's next work
// starts at 7 ms.
stepscope::Run sync_trace(bool device_busy_throughout) {
  return profiler_step_trace([&](const AddSpan& span, double t) {
    span(5, SpanKind::kUserRange, t + 3.5, t + 6.5, "## metrics ##");
    span(5, SpanKind::kCpuOp, t + 4, t + 6, "aten::item");
    span(5, SpanKind::kCpuOp, t + 4, t + 6, "aten::_local_scalar_dense");
    span(5, SpanKind::kRuntimeCall, t + 5.9, t + 6, "cudaStreamSynchronize");
    span(7, SpanKind::kKernel, t, t + 5, "gemm");
    span(7, SpanKind::kKernel, t + 7, device_busy_throughout ? t + 17 : t + 9.5, "gemm");
  });
}

TEST(Diagnosis, SyncInLoopCountsTheDeviceIdleItCauses) {
  stepscope::Run run = sync_trace(false);
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(run);
  std::vector<stepscope::ProcessSummary> processes;
  auto d = stepscope::diagnose({run, steps, processes});
  const Finding* f = find(d, "sync_in_loop");
  ASSERT_TRUE(f);
  // The device runs dry at 5 ms, after the host began to wait at 4; next work at 7.
  EXPECT_NEAR(f->share, 0.2, 1e-9);
  // The steady steps of the trace's 10 ProfilerStep ranges: the last left
  // out as cut short, the first as warm-up.
  EXPECT_EQ(steps.origin, stepscope::StepsOrigin::kProfilerSteps);
  EXPECT_TRUE(any_contains(f->evidence, "8 synchronizations in 8 steps (1.0 per step): cudaStreamSynchronize (8x)"));
  EXPECT_TRUE(any_contains(f->evidence, "blocked in them 2.0 ms per step; the device idles 2.0 ms per step"));
  EXPECT_TRUE(any_contains(f->evidence, "inside aten::item > aten::_local_scalar_dense (8x)"));
  EXPECT_TRUE(any_contains(f->evidence, "under ## metrics ## (8x)"));

  stepscope::Run busy = sync_trace(true);  // another stream keeps the device busy
  stepscope::StepsAnalysis busy_steps = stepscope::analyze_steps(busy);
  EXPECT_FALSE(find(stepscope::diagnose({busy, busy_steps, processes}), "sync_in_loop"));
}

// CPU training with gloo: the step thread runs operators from 0 to
// `compute_ms` of each step, and gloo's thread 8 all-reduces from 3 to 8 ms.
stepscope::Run gloo_trace(double compute_ms) {
  return profiler_step_trace([&](const AddSpan& span, double t) {
    span(5, SpanKind::kCpuOp, t, t + compute_ms, "aten::addmm");
    span(8, SpanKind::kUserRange, t + 3, t + 8, "gloo:all_reduce");
  });
}

TEST(Diagnosis, HostCollectivesCountTheTimeTheStepThreadWaits) {
  std::vector<stepscope::ProcessSummary> processes;
  stepscope::Run run = gloo_trace(4);
  // Another process's collectives (another rank in the same file) hold up its own steps, not these.
  run.spans.push_back({0, 100 * kMs, 6, 9, SpanKind::kUserRange, run.strings.intern("gloo:broadcast")});
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(run);
  auto d = stepscope::diagnose({run, steps, processes});
  const Finding* f = find(d, "host_collectives");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 0.4, 1e-9);  // 5 ms in flight, 1 of them beside an operator
  EXPECT_TRUE(any_contains(f->evidence, "8 collectives began in 8 steps (1.0 per step), on 1 thread: "
                                        "gloo:all_reduce (8x)"))
      << f->evidence[0];
  EXPECT_TRUE(any_contains(f->evidence, "in flight 5.0 ms per step; the step thread (tid 5) runs no operator "
                                        "during 4.0 ms per step of it"))
      << f->evidence[1];

  stepscope::Run overlapped = gloo_trace(9);  // DDP's way: the step computes meanwhile
  stepscope::StepsAnalysis overlapped_steps = stepscope::analyze_steps(overlapped);
  EXPECT_FALSE(find(stepscope::diagnose({overlapped, overlapped_steps, processes}), "host_collectives"));
}

TEST(Diagnosis, HostMemoryPressure) {
  RunBuilder b;
  b.steps(5, 10, 40, 40, 10);
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  b.counter("memory.used_bytes", 0, 100, 15 * kGiB);
  b.counter("memory.available_bytes", 0, 100, 1 * kGiB);
  b.counter("process.rss_bytes", kPid, 100, 10 * kGiB);
  b.counter("process.rss_bytes", 2, 100, 3.5 * kGiB);
  auto d = b.diagnose();
  const Finding* f = find(d, "memory_pressure");
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->expected_speedup);
  EXPECT_TRUE(any_contains(f->evidence, "peaked at 13.5 GiB of 16.0 GiB (84%)")) << f->evidence[0];
  EXPECT_TRUE(any_contains(f->evidence, "the system's available memory dropped to 1.0 GiB of 16.0 GiB (6%)"));
  EXPECT_EQ(d.findings.back().id, "memory_pressure");  // a risk ranks after time findings
}

TEST(Diagnosis, DeviceMemoryPressureAndNone) {
  RunBuilder b;
  b.steps(5, 10, 40, 40, 10);
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  b.counter("gpu.0.memory_total_bytes", 0, 100, 80 * kGiB);
  b.counter("gpu.0.memory_used_bytes", 0, 100, 78 * kGiB);
  b.counter("memory.used_bytes", 0, 100, 4 * kGiB);
  b.counter("memory.available_bytes", 0, 100, 12 * kGiB);
  auto d = b.diagnose();
  const Finding* f = find(d, "memory_pressure");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, stepscope::Severity::kHigh);  // 97.5%
  EXPECT_NE(f->title.find("device memory peaks at 98%"), std::string::npos) << f->title;
  EXPECT_NE(f->recommendation.find("activation checkpointing"), std::string::npos);
  EXPECT_EQ(f->recommendation.find("On the host"), std::string::npos);

  RunBuilder roomy;
  roomy.steps(5, 10, 40, 40, 10);
  roomy.counter("gpu.0.memory_total_bytes", 0, 100, 80 * kGiB);
  roomy.counter("gpu.0.memory_used_bytes", 0, 100, 20 * kGiB);
  roomy.counter("memory.used_bytes", 0, 100, 4 * kGiB);
  roomy.counter("memory.available_bytes", 0, 100, 12 * kGiB);
  EXPECT_FALSE(find(roomy.diagnose(), "memory_pressure"));
}

// In a container the job's capacity is its memory cgroup's limit: 7 GiB of a
// 64 GiB machine is 88 % of an 8 GiB limit, though MemAvailable shows plenty.
TEST(Diagnosis, HostMemoryPressureAgainstTheCgroupLimit) {
  RunBuilder b;
  b.steps(5, 10, 40, 40, 10);
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  for (int64_t t : {100, 200}) {
    b.counter("memory.used_bytes", 0, t, 20 * kGiB);
    b.counter("memory.available_bytes", 0, t, 44 * kGiB);
    b.counter("cgroup.memory.limit_bytes", 0, t, 8 * kGiB);
    b.counter("cgroup.memory.working_set_bytes", 0, t, t == 100 ? 5 * kGiB : 7.5 * kGiB);
  }
  b.counter("process.rss_bytes", kPid, 200, 7 * kGiB);
  auto d = b.diagnose();
  const Finding* f = find(d, "memory_pressure");
  ASSERT_TRUE(f);
  EXPECT_TRUE(any_contains(f->evidence,
                           "resident memory peaked at 7.0 GiB of 8.0 GiB (88%), the limit of the memory cgroup (the "
                           "machine has 64.0 GiB)"))
      << f->evidence[0];
  EXPECT_TRUE(any_contains(f->evidence, "the room left below the memory cgroup's limit dropped to 512 MiB of 8.0 GiB "
                                        "(6%), the limit of the memory cgroup (the machine has 64.0 GiB)"));
  EXPECT_NE(f->title.find("host memory peaks at 94%"), std::string::npos) << f->title;

  // The same job without a limit: 7 GiB of 64 is no pressure.
  RunBuilder free;
  free.steps(5, 10, 40, 40, 10);
  free.counter("memory.used_bytes", 0, 100, 20 * kGiB);
  free.counter("memory.available_bytes", 0, 100, 44 * kGiB);
  free.counter("cgroup.memory.working_set_bytes", 0, 100, 7.5 * kGiB);  // no limit track: unlimited
  free.counter("process.rss_bytes", kPid, 100, 7 * kGiB);
  EXPECT_FALSE(find(free.diagnose(), "memory_pressure"));
}

// A trace's allocator counters (process.gpu.N.*_bytes, from "[memory]"
// events) against the GPU's totalGlobalMem from its deviceProperties.
TEST(Diagnosis, DeviceMemoryPressureFromTraceAllocatorEvents) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  auto trace_run = [&](double reserved) {
    RunBuilder b;
    b.run.metadata["deviceProperties"] =
        R"([{"id": 0, "name": "A", "totalGlobalMem": 85899345920}, {"id": 1, "totalGlobalMem": 34359738368}])";
    b.counter("process.gpu.1.allocated_bytes", 42, 10, 20 * kGiB);
    b.counter("process.gpu.1.reserved_bytes", 42, 10, reserved);
    b.counter("process.gpu.1.allocated_bytes", 42, 20, 4 * kGiB);
    b.counter("process.gpu.1.reserved_bytes", 42, 20, 24 * kGiB);
    return b;
  };
  RunBuilder pressed = trace_run(31 * kGiB);  // of GPU 1's 32 GiB, not GPU 0's 80
  auto d = pressed.diagnose();
  const Finding* f = find(d, "memory_pressure");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, stepscope::Severity::kHigh);  // 96.9%
  EXPECT_NE(f->title.find("device memory peaks at 97%"), std::string::npos) << f->title;
  EXPECT_TRUE(any_contains(f->evidence, "GPU 1 (process 42): PyTorch's allocator reserved up to 31.0 GiB of 32.0 GiB "
                                        "(97%), tensors took up to 20.0 GiB (62%)"))
      << f->evidence[0];
  RunBuilder roomy = trace_run(25 * kGiB);  // 78%
  EXPECT_FALSE(find(roomy.diagnose(), "memory_pressure"));
  // Without the GPU's capacity there is nothing to compare with.
  RunBuilder unknown = trace_run(31 * kGiB);
  unknown.run.metadata.erase("deviceProperties");
  EXPECT_FALSE(find(unknown.diagnose(), "memory_pressure"));
}

TEST(Diagnosis, JsonListsFindingsBestFirstEscaped) {
  RunBuilder b;
  int64_t end = b.steps(20, 50, 20, 20, 10);
  b.cores(end, 100, 0);
  b.restack_in_steps(20, 100, 0, 50, {b.loop, b.run.intern_frame("<img src=x>\x1b[31m", "d.py", 1)});
  stepscope::Report report = stepscope::build_report(b.run, "run.db", {});
  std::ostringstream out;
  stepscope::write_report_json(report, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(out.str());
  simdjson::dom::array list = doc["diagnosis"];
  ASSERT_GE(list.size(), 1u);
  simdjson::dom::element first = list.at(0);
  EXPECT_EQ(std::string_view(first["id"]), "input_bound");
  EXPECT_EQ(std::string_view(first["severity"]), "high");
  EXPECT_NEAR(double(first["expected_speedup"]), 2.0, 1e-9);
  EXPECT_NEAR(double(first["share"]), 0.5, 1e-9);
  bool named = false;
  for (simdjson::dom::element e : simdjson::dom::array(first["evidence"])) {
    named |= std::string_view(e).find("<img src=x>\\x1B[31m") != std::string_view::npos;
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(out.str().find("<img"), std::string::npos);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos);
}

TEST(Diagnosis, TextVerdictFirstPlainOrColored) {
  RunBuilder b;
  int64_t end = b.steps(20, 50, 20, 20, 10);
  b.cores(end, 100, 0);
  b.restack_in_steps(20, 100, 0, 50, {b.loop, b.run.intern_frame("evil\x1b[2J", "d.py", 1)});
  stepscope::Report report = stepscope::build_report(b.run, "run.db", {});
  std::ostringstream plain, colored;
  stepscope::write_report_text(report, plain);
  std::string text = plain.str();
  size_t verdict = text.find("Verdict: Input-bound: 50% of each step waits for the DataLoader");
  ASSERT_NE(verdict, std::string::npos) << text;
  EXPECT_LT(verdict, text.find("Throughput and step anatomy"));
  EXPECT_LT(text.find("Hottest functions"), text.find("Details"));
  EXPECT_LT(text.find("Details"), text.find("Steps of pid"));
  EXPECT_NE(text.find("evil\\x1B[2J"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  stepscope::write_report_text(report, colored, {.color = true});
  std::string styled = colored.str();
  EXPECT_NE(styled.find("\x1b[1m"), std::string::npos);
  EXPECT_EQ(styled.find("\x1b[2J"), std::string::npos) << "a name's escape sequence reached the terminal";
}

}  // namespace
