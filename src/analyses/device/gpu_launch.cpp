// Kernel launch statistics (HTA's get_cuda_kernel_launch_stats), for every
// runtime call that launched device activity, whatever its vendor's name.
#include <algorithm>

#include "analyses/device/gpu.hpp"

namespace stepscope {

namespace {

// Nearest-rank percentile: the value a sort would put at that rank, found by
// selection (linear) instead of sorting a million values.
int64_t percentile(std::vector<int64_t>& values, double p) {
  size_t rank = static_cast<size_t>(p * static_cast<double>(values.size()) + 0.999999);
  auto at = values.begin() + static_cast<ptrdiff_t>(std::clamp<size_t>(rank, 1, values.size()) - 1);
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

Distribution distribution(std::vector<int64_t> values) {
  Distribution d;
  if (values.empty()) return d;
  d.count = values.size();
  double sum = 0;
  // Exact in any order while the total stays under 2^53 ns (104 days): the
  // same mean as summing the sorted values.
  for (int64_t v : values) sum += static_cast<double>(v);
  d.mean_ns = sum / static_cast<double>(values.size());
  d.max_ns = *std::max_element(values.begin(), values.end());
  d.p50_ns = percentile(values, 0.5);
  d.p95_ns = percentile(values, 0.95);
  return d;
}

}  // namespace

GpuLaunch gpu_launch(const Run& run, const DeviceActivity& activity) {
  GpuLaunch result;
  std::vector<int64_t> cpu, device, delay;
  // Room for every event: regrowing three lists of a million would copy
  // them and touch their pages twice; capacity never touched costs nothing.
  for (std::vector<int64_t>* list : {&cpu, &device, &delay}) list->reserve(activity.events.size());
  for (const DeviceEvent& event : activity.events) {
    if (event.launch == kNoLaunch) continue;
    const Span& call = run.spans[event.launch];
    const Span& work = run.spans[event.span];
    int64_t cpu_ns = call.end_ns - call.start_ns;
    int64_t device_ns = work.end_ns - work.start_ns;
    int64_t delay_ns = std::max<int64_t>(0, work.start_ns - call.end_ns);
    cpu.push_back(cpu_ns);
    device.push_back(device_ns);
    delay.push_back(delay_ns);
    if (device_ns < cpu_ns) result.tiny++;
    if (cpu_ns > kRuntimeOutlierNs) result.runtime_outliers++;
    if (delay_ns > kDelayOutlierNs) result.delay_outliers++;
  }
  result.launches = cpu.size();
  result.cpu_duration = distribution(std::move(cpu));
  result.device_duration = distribution(std::move(device));
  result.launch_delay = distribution(std::move(delay));
  return result;
}

}  // namespace stepscope
