// The device-side diagnosis rules on hand-made GPU analyses: each fires on
// figures that show its mechanism, with the Amdahl bound of the measured
// share, and stays quiet just under its threshold.
#include <gtest/gtest.h>

#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/diagnosis/rules.hpp"
#include "analyses/report.hpp"

namespace {

using stepscope::Finding;
using stepscope::GpuRank;

constexpr int64_t kMs = 1'000'000;

// A rank traced over 100 ms: `busy_ms` of activity, the idle time of its one
// stream split by cause, `launches` of which `tiny` were shorter than their call.
GpuRank rank_with(int64_t busy_ms, int64_t host_wait_ms, int64_t other_ms, size_t launches, size_t tiny) {
  GpuRank r;
  r.events = launches;
  r.temporal.span_ns = 100 * kMs;
  r.temporal.busy_ns = busy_ms * kMs;
  r.temporal.idle_ns = (100 - busy_ms) * kMs;
  r.temporal.compute_ns = busy_ms * kMs;
  stepscope::StreamIdle stream;
  stream.events = launches;
  stream.span_ns = 100 * kMs;
  stream.host_wait_ns = host_wait_ms * kMs;
  stream.kernel_wait_ns = (100 - busy_ms - host_wait_ms - other_ms) * kMs;
  stream.other_ns = other_ms * kMs;
  r.idle_by_stream.push_back(stream);
  r.launch.launches = launches;
  r.launch.tiny = tiny;
  return r;
}

stepscope::Diagnosis diagnose(const GpuRank* rank) {
  stepscope::Run run;
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(run);
  std::vector<stepscope::ProcessSummary> processes;
  return stepscope::diagnose({run, steps, processes, rank});
}

const Finding* find(const stepscope::Diagnosis& d, std::string_view id) {
  for (const Finding& f : d.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

TEST(DiagnosisGpu, HostLaunchBoundWhenIdleIsHostWaitBetweenTinyKernels) {
  GpuRank r = rank_with(40, 50, 5, 1000, 700);  // idle 60 %: host wait 50, kernel wait 5, other 5
  auto d = diagnose(&r);
  const Finding* f = find(d, "host_launch_bound");
  ASSERT_TRUE(f);
  EXPECT_FALSE(find(d, "gpu_idle"));  // one explanation of the same idle time
  EXPECT_DOUBLE_EQ(f->share, 0.6);
  EXPECT_DOUBLE_EQ(*f->expected_speedup, 2.5);
  EXPECT_EQ(f->severity, stepscope::Severity::kHigh);
  EXPECT_NE(f->evidence[1].find("waiting for the host to launch 83%"), std::string::npos) << f->evidence[1];
  EXPECT_NE(f->evidence[2].find("700 of 1000 launches (70%)"), std::string::npos) << f->evidence[2];
  EXPECT_NE(f->recommendation.find("CUDA graphs"), std::string::npos);
}

TEST(DiagnosisGpu, GpuIdleWhenKernelsAreNotTinyOrIdleIsNotHostWait) {
  GpuRank big_kernels = rank_with(40, 50, 5, 1000, 300);  // 30 % tiny
  auto d = diagnose(&big_kernels);
  ASSERT_TRUE(find(d, "gpu_idle"));
  EXPECT_FALSE(find(d, "host_launch_bound"));
  EXPECT_DOUBLE_EQ(find(d, "gpu_idle")->share, 0.6);

  GpuRank synced = rank_with(40, 10, 45, 1000, 700);  // idle mostly waiting on syncs, other streams
  auto kept = diagnose(&synced);  // findings point into it
  const Finding* f = find(kept, "gpu_idle");
  ASSERT_TRUE(f);
  EXPECT_NE(f->recommendation.find("synchronize()"), std::string::npos);

  GpuRank few = rank_with(40, 50, 5, stepscope::kMinLaunches - 1, stepscope::kMinLaunches - 1);
  EXPECT_TRUE(find(diagnose(&few), "gpu_idle"));
}

TEST(DiagnosisGpu, BusyDeviceOrTooLittleActivityIsNoFinding) {
  GpuRank busy = rank_with(76, 20, 2, 1000, 900);  // idle 24 %, under the 25 % bar
  EXPECT_TRUE(diagnose(&busy).findings.empty());
  GpuRank tiny_trace = rank_with(10, 80, 5, 5, 5);  // 5 events say nothing
  EXPECT_TRUE(diagnose(&tiny_trace).findings.empty());
  EXPECT_TRUE(diagnose(nullptr).findings.empty());
}

TEST(DiagnosisGpu, CommunicationNotOverlapped) {
  GpuRank r = rank_with(90, 5, 0, 1000, 0);
  r.temporal.communication_ns = 30 * kMs;
  r.temporal.comm_comp_overlap = 0.5;  // 15 ms exposed of 100
  r.kernels.by_class[static_cast<size_t>(stepscope::KernelClass::kCommunication)].add(30 * kMs);
  auto kept = diagnose(&r);  // findings point into it
  const Finding* f = find(kept, "communication_not_overlapped");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->share, 0.15);
  EXPECT_NEAR(*f->expected_speedup, 1 / 0.85, 1e-12);
  EXPECT_NE(f->evidence[0].find("30.0 ms"), std::string::npos) << f->evidence[0];
  EXPECT_NE(f->evidence[0].find("15.0 ms exposed"), std::string::npos) << f->evidence[0];

  r.temporal.comm_comp_overlap = 0.7;  // 9 % exposed
  EXPECT_FALSE(find(diagnose(&r), "communication_not_overlapped"));
}

TEST(DiagnosisGpu, PageableCopies) {
  GpuRank r = rank_with(80, 10, 5, 1000, 0);
  stepscope::MemcpyDirection htod{.direction = "HtoD", .count = 20, .total_ns = 12 * kMs, .bytes = 1'200'000'000,
                                  .timed_bytes_ns = 12 * kMs};
  htod.pageable = 16;
  htod.pageable_ns = 10 * kMs;  // 12.5 % of the 80 ms busy, 10 % of the span
  r.memcpy.directions.push_back(htod);
  auto kept = diagnose(&r);  // findings point into it
  const Finding* f = find(kept, "pageable_memcpy");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->share, 0.1);
  EXPECT_NE(f->evidence[0].find("16 of 20 copies (HtoD 16)"), std::string::npos) << f->evidence[0];
  EXPECT_NE(f->evidence[1].find("100.0 GB/s"), std::string::npos) << f->evidence[1];
  EXPECT_NE(f->recommendation.find("pin_memory=True"), std::string::npos);

  r.memcpy.directions[0].pageable_ns = 7 * kMs;  // 8.75 % of busy time
  EXPECT_FALSE(find(diagnose(&r), "pageable_memcpy"));
}

TEST(DiagnosisGpu, SmallCopies) {
  GpuRank r = rank_with(80, 10, 5, 1000, 0);
  r.profiler_steps = 4;
  r.complete_steps_only = true;  // 3 steps' activity
  stepscope::MemcpyDirection dtoh{.direction = "DtoH", .count = 200, .total_ns = 2 * kMs};
  dtoh.small = 150;
  dtoh.small_ns = 1 * kMs;
  r.memcpy.directions.push_back(dtoh);
  stepscope::MemcpyDirection memset{.direction = "memset", .count = 1000};  // not copies
  r.memcpy.directions.push_back(memset);
  auto kept = diagnose(&r);  // findings point into it
  const Finding* f = find(kept, "small_memcpy");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->share, 0.01);
  EXPECT_NE(f->evidence[0].find("150 of 200 copies (75%; DtoH 150)"), std::string::npos) << f->evidence[0];
  EXPECT_EQ(f->evidence[1], "50 small copies per profiler step");

  r.memcpy.directions[0].count = 400;  // 37.5 % of the copies
  EXPECT_FALSE(find(diagnose(&r), "small_memcpy"));
}

TEST(DiagnosisGpu, AFewSmallCopiesAStepAreNoFinding) {
  GpuRank r = rank_with(80, 10, 5, 1000, 0);
  stepscope::MemcpyDirection htod{.direction = "HtoD", .count = 150, .total_ns = 2 * kMs};
  htod.small = 150;
  r.memcpy.directions.push_back(htod);
  r.profiler_steps = 15;  // 10 small copies in each: the line
  EXPECT_TRUE(find(diagnose(&r), "small_memcpy"));
  r.profiler_steps = 16;  // fewer than 10 a step: inputs, targets, a loss read back
  EXPECT_FALSE(find(diagnose(&r), "small_memcpy"));
  r.profiler_steps = 0;  // steps unknown: the counts alone decide
  EXPECT_TRUE(find(diagnose(&r), "small_memcpy"));
}

TEST(DiagnosisGpu, ReportPassesTheFirstRanksAnalysis) {
  // A trace whose device idles between launches of tiny kernels.
  stepscope::Run run;
  for (int64_t i = 0; i < 200; ++i) {
    int64_t t = i * 100'000;  // a launch every 100 us: a 10 us call, then 5 us of work
    stepscope::Span call{t, t + 10'000, 100, 100, stepscope::SpanKind::kRuntimeCall, run.strings.intern("cudaLaunchKernel")};
    call.correlation = i + 1;
    run.spans.push_back(call);
    stepscope::Span kernel{t + 12'000, t + 17'000, 0, 7, stepscope::SpanKind::kKernel, run.strings.intern("add")};
    kernel.correlation = i + 1;
    run.spans.push_back(kernel);
  }
  stepscope::Report report = stepscope::build_report(run, "trace.json", {}, {});
  ASSERT_FALSE(report.diagnosis.findings.empty());
  const Finding& f = report.diagnosis.findings.front();
  EXPECT_EQ(f.id, "host_launch_bound");
  // Busy 200 x 5 us over a span from 12 us to 19 917 us.
  EXPECT_NEAR(f.share, 1 - 1000.0 / 19'905.0, 1e-9);
}

// A recorded run (hooked steps): the device's idle time is taken over the
// steady steps, less the main thread's data waits. A data wait on another
// thread of the process (a prefetching thread) excuses nothing: the step's
// own thread was not waiting.
TEST(DiagnosisGpu, RecordedRunExcusesOnlyTheMainThreadsDataWaits) {
  constexpr int64_t kUs = 1'000;
  stepscope::Run run;
  run.add_process(100, "python train.py");
  auto add = [&](int64_t start, int64_t end, int64_t pid, int64_t tid, stepscope::SpanKind kind,
                 const char* name) -> stepscope::Span& {
    return run.spans.emplace_back(stepscope::Span{start, end, pid, tid, kind, run.strings.intern(name)});
  };
  for (int64_t i = 0; i < 100; ++i) {  // steps of 1 ms: wait 300 us, then a 10 us launch of a 5 us kernel
    int64_t t = i * 1000 * kUs;
    add(t, t + 1000 * kUs, 100, 100, stepscope::SpanKind::kStep, "step");
    add(t, t + 300 * kUs, 100, 100, stepscope::SpanKind::kDataWait, "wait");
    add(t + 500 * kUs, t + 900 * kUs, 100, 101, stepscope::SpanKind::kDataWait, "wait");  // not the step's thread
    add(t + 400 * kUs, t + 410 * kUs, 100, 100, stepscope::SpanKind::kRuntimeCall, "cudaLaunchKernel").correlation = i + 1;
    add(t + 412 * kUs, t + 417 * kUs, 0, 7, stepscope::SpanKind::kKernel, "add").correlation = i + 1;
  }
  stepscope::Report report = stepscope::build_report(run, "run.db", {}, {});
  const Finding* f = nullptr;
  for (const char* id : {"host_launch_bound", "gpu_idle"}) {
    if (!f) f = find(report.diagnosis, id);
  }
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->share, 1 - (5.0 + 300.0) / 1000.0, 1e-9);  // not 1 - (5 + 300 + 400) / 1000
}

}  // namespace
