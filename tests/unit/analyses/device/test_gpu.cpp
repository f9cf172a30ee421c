// The device analyses on hand-made activity: temporal unions, idle causes
// per stream, kernel classes, launches, copies, complete steps, ranks.
#include <gtest/gtest.h>

#include "analyses/device/gpu.hpp"
#include "analyses/device/rank_comparison.hpp"

namespace {

using stepscope::KernelClass;
using stepscope::SpanKind;

constexpr int64_t kUs = 1000;

struct GpuBuilder {
  stepscope::Run run;
  int64_t next_correlation = 1;
  // A kernel on (device 0, stream) over [start, end) us, launched on the host
  // by a call over [launch_start, launch_end) unless launch_start < 0.
  void kernel(std::string_view name, int64_t stream, int64_t start, int64_t end, int64_t launch_start = -1,
              int64_t launch_end = -1, SpanKind kind = SpanKind::kKernel, int64_t bytes = 0) {
    int64_t correlation = 0;
    if (launch_start >= 0) {
      correlation = next_correlation++;
      stepscope::Span call{launch_start * kUs, launch_end * kUs, 100, 100, SpanKind::kRuntimeCall,
                           run.strings.intern("cudaLaunchKernel")};
      call.correlation = correlation;
      run.spans.push_back(call);
    }
    stepscope::Span s{start * kUs, end * kUs, 0, stream, kind, run.strings.intern(name)};
    s.correlation = correlation;
    s.bytes = bytes;
    run.spans.push_back(s);
  }
  void step(std::string_view name, int64_t start, int64_t end) {
    run.spans.push_back({start * kUs, end * kUs, 100, 100, SpanKind::kUserRange, run.strings.intern(name)});
  }
};

TEST(Gpu, KernelClassesFollowHtaAndAreVendorNeutral) {
  using stepscope::classify_kernel;
  EXPECT_EQ(classify_kernel(SpanKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)"),
            KernelClass::kCommunication);
  EXPECT_EQ(classify_kernel(SpanKind::kKernel, "ncclKernel_AllGather_RING_LL_Sum_int8_t"), KernelClass::kCommunication);
  EXPECT_EQ(classify_kernel(SpanKind::kKernel, "rcclKernel_x"), KernelClass::kCommunication);
  EXPECT_EQ(classify_kernel(SpanKind::kMemcpy, "Memcpy DtoD (Device -> Device)"), KernelClass::kMemory);
  EXPECT_EQ(classify_kernel(SpanKind::kKernel, "dma_request"), KernelClass::kMemory);  // MTIA
  EXPECT_EQ(classify_kernel(SpanKind::kMemset, "fill"), KernelClass::kMemory);
  EXPECT_EQ(classify_kernel(SpanKind::kKernel, "volta_sgemm_64x64_nt"), KernelClass::kComputation);
  EXPECT_EQ(classify_kernel(SpanKind::kKernel, "Event Sync"), KernelClass::kOther);
}

TEST(Gpu, TemporalBreakdownUsesUnions) {
  GpuBuilder b;
  b.kernel("gemm", 7, 100, 200);
  b.kernel("gemm", 8, 150, 250);  // concurrent on another stream: counted once
  b.kernel("ncclDevKernel_AllReduce", 9, 180, 300);
  b.kernel("Memcpy HtoD (Pageable -> Device)", 7, 400, 410, -1, -1, SpanKind::kMemcpy, 4'000'000);
  b.run.spans.push_back({0, 1000 * kUs, 0, 7, SpanKind::kDeviceAnnotation, b.run.strings.intern("anno")});
  auto rank = stepscope::analyze_gpu_rank(b.run, "t.json");
  EXPECT_EQ(rank.events, 4u);  // the annotation is not activity
  EXPECT_EQ(rank.temporal.span_ns, 310 * kUs);
  EXPECT_EQ(rank.temporal.busy_ns, (200 + 10) * kUs);
  EXPECT_EQ(rank.temporal.idle_ns, 100 * kUs);
  EXPECT_EQ(rank.temporal.compute_ns, 150 * kUs);
  EXPECT_EQ(rank.temporal.non_compute_ns, 60 * kUs);
  EXPECT_EQ(rank.temporal.communication_ns, 120 * kUs);
  ASSERT_TRUE(rank.temporal.comm_comp_overlap);
  EXPECT_DOUBLE_EQ(*rank.temporal.comm_comp_overlap, 70.0 / 120.0);
  ASSERT_EQ(rank.memcpy.directions.size(), 1u);
  EXPECT_EQ(rank.memcpy.directions[0].direction, "HtoD");
  EXPECT_DOUBLE_EQ(*rank.memcpy.directions[0].bandwidth_gbps(), 400.0);  // 4 MB in 10 us
}

TEST(Gpu, IdleGapsByCause) {
  GpuBuilder b;
  b.kernel("k", 7, 100, 200, 90, 95);
  b.kernel("k", 7, 210, 300, 150, 160);  // launched early, gap 10 us: kernel wait
  b.kernel("k", 7, 400, 450, 350, 360);  // launched after 300: host wait of 100 us
  b.kernel("k", 7, 500, 520, 380, 390);  // launched early, gap 50 us: other
  b.kernel("k", 7, 510, 530);            // overlaps: no idle, no launch
  auto streams = stepscope::analyze_gpu_rank(b.run, "").idle_by_stream;
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(streams[0].kernel_wait_ns, 10 * kUs);
  EXPECT_EQ(streams[0].host_wait_ns, 100 * kUs);
  EXPECT_EQ(streams[0].other_ns, 50 * kUs);
  EXPECT_EQ(streams[0].span_ns, 430 * kUs);
}

TEST(Gpu, KernelsLaunchesAndCompleteSteps) {
  GpuBuilder b;
  b.step("ProfilerStep#1", 0, 1000);
  b.step("ProfilerStep#2", 1000, 2000);  // the last: cut short, left out
  b.kernel("a", 7, 100, 104, 10, 20);    // 4 us of work for a 10 us call: tiny
  b.kernel("a", 7, 200, 260, 30, 40);
  b.kernel("b", 7, 300, 400, 250, 320);  // started before its call ended: delay 0
  b.kernel("a", 7, 1100, 1200, 1010, 1020);
  auto rank = stepscope::analyze_gpu_rank(b.run, "");
  EXPECT_TRUE(rank.complete_steps_only);
  EXPECT_EQ(rank.profiler_steps, 2u);
  EXPECT_EQ(rank.left_out, 1u);
  ASSERT_TRUE(rank.step_mean_ns);
  EXPECT_DOUBLE_EQ(*rank.step_mean_ns, 1000.0 * kUs);
  ASSERT_EQ(rank.kernels.by_name.size(), 2u);
  EXPECT_EQ(rank.kernels.by_name[0].name, "b");
  EXPECT_EQ(rank.kernels.by_name[1].time.count, 2u);
  EXPECT_EQ(rank.kernels.by_name[1].time.min_ns, 4 * kUs);
  EXPECT_EQ(rank.kernels.by_name[1].time.max_ns, 60 * kUs);
  EXPECT_EQ(rank.launch.launches, 3u);
  EXPECT_EQ(rank.launch.tiny, 1u);
  EXPECT_EQ(rank.launch.launch_delay.max_ns, 160 * kUs);
  EXPECT_DOUBLE_EQ(rank.launch.launch_delay.mean_ns, (80.0 + 160.0 + 0.0) / 3 * kUs);
  EXPECT_EQ(rank.launch.runtime_outliers, 1u);  // the 70 us call
  EXPECT_EQ(rank.launch.delay_outliers, 1u);    // the 160 us delay
}

TEST(Gpu, PageableAndSmallCopies) {
  GpuBuilder b;
  b.kernel("Memcpy HtoD (Pageable -> Device)", 7, 0, 100, -1, -1, SpanKind::kMemcpy, 1 << 20);
  b.kernel("Memcpy HtoD (Pinned -> Device)", 7, 100, 110, -1, -1, SpanKind::kMemcpy, 4096);  // small
  b.kernel("Memcpy DtoH (Device -> Pageable)", 7, 200, 203, -1, -1, SpanKind::kMemcpy, 4);  // both
  b.kernel("Memset (Device)", 7, 300, 301, -1, -1, SpanKind::kMemset, 8);  // a memset: neither
  // The collector's detail says pageable even under another name.
  b.kernel("Memcpy HtoD", 7, 400, 420, -1, -1, SpanKind::kMemcpy, 1 << 20);
  b.run.spans.back().detail = b.run.strings.intern("HtoD Pageable");
  auto memcpy = stepscope::analyze_gpu_rank(b.run, "").memcpy;
  ASSERT_EQ(memcpy.directions.size(), 3u);
  const auto& htod = memcpy.directions[0];
  EXPECT_EQ(htod.direction, "HtoD");
  EXPECT_EQ(htod.pageable, 2u);
  EXPECT_EQ(htod.pageable_ns, 120 * kUs);
  EXPECT_EQ(htod.small, 1u);
  EXPECT_EQ(htod.small_ns, 10 * kUs);
  const auto& dtoh = memcpy.directions[1];
  EXPECT_EQ(dtoh.direction, "DtoH");
  EXPECT_EQ(dtoh.pageable, 1u);
  EXPECT_EQ(dtoh.small, 1u);
  EXPECT_EQ(memcpy.directions[2].direction, "memset");
  EXPECT_EQ(memcpy.directions[2].small + memcpy.directions[2].pageable, 0u);
}

TEST(Gpu, NoDeviceActivityAndRankFromMetadata) {
  stepscope::Run run;
  run.metadata["distributedInfo"] = R"({"backend": "nccl", "rank": 3, "world_size": 4})";
  auto rank = stepscope::analyze_gpu_rank(run, "");
  EXPECT_EQ(rank.rank, 3);
  EXPECT_EQ(rank.events, 0u);
  EXPECT_EQ(rank.temporal.span_ns, 0);
  run.metadata["distributedInfo"] = "{not json";
  EXPECT_FALSE(stepscope::analyze_gpu_rank(run, "").rank);
}

TEST(Gpu, StragglersStandOutFromTheMedian) {
  std::vector<stepscope::GpuRank> ranks(4);
  double steps[] = {100, 101, 99, 130};
  for (size_t i = 0; i < 4; ++i) {
    ranks[i].rank = static_cast<int64_t>(i);
    ranks[i].step_mean_ns = steps[i] * 1e6;
  }
  auto comparison = stepscope::compare_ranks(ranks);
  const auto& step = comparison.metrics[0];
  ASSERT_EQ(step.stragglers.size(), 1u);
  EXPECT_EQ(step.stragglers[0], 3u);
  EXPECT_DOUBLE_EQ(*step.median_ns, 100.5e6);
  EXPECT_TRUE(comparison.metrics[1].stragglers.empty());  // no device activity: no compute figure
  // Two ranks: only the tolerance decides.
  ranks.resize(2);
  ranks[1].step_mean_ns = 104e6;
  EXPECT_TRUE(stepscope::compare_ranks(ranks).metrics[0].stragglers.empty());
  ranks[1].step_mean_ns = 120e6;
  EXPECT_EQ(stepscope::compare_ranks(ranks).metrics[0].stragglers.size(), 1u);
}

}  // namespace
