#include "analyses/device/gpu.hpp"

#include "analyses/ranks.hpp"

namespace stepscope {

GpuRank analyze_gpu_rank(const Run& run, const std::string& source) {
  return analyze_gpu_rank(run, source, DeviceLaunches(run));
}

GpuRank analyze_gpu_rank(const Run& run, const std::string& source, const DeviceLaunches& launches) {
  DeviceActivity activity = collect_device_activity(run, launches);
  GpuRank rank;
  rank.rank = run_rank(run);
  rank.source = source;
  rank.events = activity.events.size();
  rank.profiler_steps = activity.profiler_steps;
  rank.complete_steps_only = activity.complete_steps_only;
  rank.left_out = activity.left_out;
  if (!activity.complete_step_ns.empty()) {
    double total = 0;
    for (int64_t ns : activity.complete_step_ns) total += static_cast<double>(ns);
    rank.step_mean_ns = total / static_cast<double>(activity.complete_step_ns.size());
  }
  rank.temporal = gpu_temporal(run, activity);
  rank.idle_by_stream = gpu_idle_by_stream(run, activity);
  rank.kernels = gpu_kernels(run, activity);
  rank.launch = gpu_launch(run, activity);
  rank.memcpy = gpu_memcpy(run, activity);
  return rank;
}

}  // namespace stepscope
