// Device (GPU, MTIA, ...) analyses of one rank's trace, with the definitions
// of Holistic Trace Analysis (HTA), which users know. Each part is computed in
// its own file (gpu_temporal, gpu_idle, gpu_kernels, gpu_launch, gpu_memcpy)
// from the DeviceActivity of the rank; definitions and JSON: docs/gpu.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyses/device/activity.hpp"
#include "analyses/spans/intervals.hpp"
#include "run/run.hpp"

namespace stepscope {

// Busy and idle time over the span from the first activity's start to the
// last one's end. Unions of intervals, so concurrent streams count once.
struct GpuTemporal {
  int64_t span_ns = 0;
  int64_t busy_ns = 0;     // union of all activity
  int64_t idle_ns = 0;     // span - busy
  int64_t compute_ns = 0;  // union of computation kernels
  int64_t non_compute_ns = 0;  // busy - compute
  int64_t communication_ns = 0;  // union of communication kernels
  int64_t memory_ns = 0;         // union of copies, memsets, DMA
  // Share of communication time during which computation also ran; empty
  // without communication.
  std::optional<double> comm_comp_overlap;
};
GpuTemporal gpu_temporal(const Run& run, const DeviceActivity& activity);

// Gaps between consecutive activity on one stream, by cause: host wait (the
// next activity was launched only after the previous one had ended), kernel
// wait (a gap under kKernelWaitThresholdNs: back-to-back launch overhead) or
// other (waiting on another stream, an event, a sync).
inline constexpr int64_t kKernelWaitThresholdNs = 30'000;  // HTA's consecutive_kernel_delay (30 us)
struct StreamIdle {
  int64_t pid = 0;  // the device's track
  int64_t tid = 0;  // the stream's track
  size_t events = 0;
  int64_t span_ns = 0;  // first start to last end on this stream
  int64_t host_wait_ns = 0;
  int64_t kernel_wait_ns = 0;
  int64_t other_ns = 0;
  int64_t idle_ns() const { return host_wait_ns + kernel_wait_ns + other_ns; }
};
std::vector<StreamIdle> gpu_idle_by_stream(const Run& run, const DeviceActivity& activity);

struct DurationStats {
  size_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  void add(int64_t ns);
  double mean_ns() const { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0; }
};

// Names are copied out of the Run, so a rank's results outlive its trace
// (report reads several ranks one after another).
struct KernelNameStats {
  std::string name;
  KernelClass kind = KernelClass::kComputation;
  DurationStats time;
};
struct GpuKernels {
  std::vector<KernelNameStats> by_name;  // most total time first
  std::array<DurationStats, kKernelClassCount> by_class{};  // indexed by KernelClass
};
GpuKernels gpu_kernels(const Run& run, const DeviceActivity& activity);

// Per launch (a runtime call and the activity it caused): the call's CPU
// duration, the activity's device duration and the launch delay (device start
// minus the call's end, not below zero), as HTA's kernel launch statistics.
struct Distribution {
  size_t count = 0;
  double mean_ns = 0;
  int64_t p50_ns = 0, p95_ns = 0, max_ns = 0;
};
inline constexpr int64_t kRuntimeOutlierNs = 50'000;   // HTA's runtime_cutoff (50 us)
inline constexpr int64_t kDelayOutlierNs = 100'000;    // HTA's launch_delay_cutoff (100 us)
struct GpuLaunch {
  size_t launches = 0;
  Distribution cpu_duration;
  Distribution device_duration;
  Distribution launch_delay;
  // Activity shorter than the call that launched it: launch overhead exceeds
  // the work (HTA's "short kernels", without its 50 us cap on the call).
  size_t tiny = 0;
  size_t runtime_outliers = 0;  // calls longer than kRuntimeOutlierNs
  size_t delay_outliers = 0;    // delays longer than kDelayOutlierNs
};
GpuLaunch gpu_launch(const Run& run, const DeviceActivity& activity);

// Copies and memsets by direction ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP",
// "memset", "unknown"): count, time, bytes and the achieved bandwidth of the
// operations whose size the trace gives; of the copies, those from or to
// pageable host memory (staged by the driver and synchronous with the host)
// and those under kSmallMemcpyBytes (per-copy overhead exceeds the transfer).
inline constexpr int64_t kSmallMemcpyBytes = 64 * 1024;
struct MemcpyDirection {
  std::string direction;
  size_t count = 0;
  int64_t total_ns = 0;
  int64_t bytes = 0;
  int64_t timed_bytes_ns = 0;  // time of the operations with a known size
  size_t pageable = 0;
  int64_t pageable_ns = 0;
  size_t small = 0;  // copies (not memsets) of a known size under kSmallMemcpyBytes
  int64_t small_ns = 0;
  std::optional<double> bandwidth_gbps() const;
};
struct GpuMemcpy {
  std::vector<MemcpyDirection> directions;  // most time first
};
GpuMemcpy gpu_memcpy(const Run& run, const DeviceActivity& activity);
std::string memcpy_direction(SpanKind kind, std::string_view name);
// Kineto names a copy "Memcpy HtoD (Pageable -> Device)"; stepscope's GPU
// collector names it so too and writes "HtoD Pageable" in its detail.
bool is_pageable_memcpy(std::string_view name, std::string_view detail);

struct GpuRank {
  std::optional<int64_t> rank;
  std::string source;
  size_t events = 0;
  size_t profiler_steps = 0;
  bool complete_steps_only = false;
  size_t left_out = 0;
  std::optional<double> step_mean_ns;  // mean of the complete ProfilerStep ranges
  GpuTemporal temporal;
  std::vector<StreamIdle> idle_by_stream;
  GpuKernels kernels;
  GpuLaunch launch;
  GpuMemcpy memcpy;
};
GpuRank analyze_gpu_rank(const Run& run, const std::string& source);
// The same with the launches `report` joined once for all its analyses.
GpuRank analyze_gpu_rank(const Run& run, const std::string& source, const DeviceLaunches& launches);

// The device analyses of every rank `report` was given, in input order.
struct GpuAnalysis {
  std::vector<GpuRank> ranks;
};

}  // namespace stepscope
