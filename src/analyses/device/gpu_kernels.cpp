// Kernel breakdown per name and per class (HTA's get_gpu_kernel_breakdown,
// without its folding of small kernels into "others").
#include <algorithm>

#include "analyses/device/gpu.hpp"

namespace stepscope {

void DurationStats::add(int64_t ns) {
  min_ns = count == 0 ? ns : std::min(min_ns, ns);
  max_ns = count == 0 ? ns : std::max(max_ns, ns);
  total_ns += ns;
  count++;
}

GpuKernels gpu_kernels(const Run& run, const DeviceActivity& activity) {
  GpuKernels result;
  // Name ids are dense: a slot per string id instead of a map per event.
  std::vector<uint32_t> slot(run.strings.size(), UINT32_MAX);
  std::vector<StringId> names;
  for (const DeviceEvent& event : activity.events) {
    const Span& span = run.spans[event.span];
    int64_t ns = span.end_ns - span.start_ns;
    result.by_class[static_cast<size_t>(event.kind)].add(ns);
    uint32_t& index = slot[span.name];
    if (index == UINT32_MAX) {
      index = static_cast<uint32_t>(result.by_name.size());
      result.by_name.emplace_back().kind = event.kind;
      names.push_back(span.name);
    }
    result.by_name[index].time.add(ns);
  }
  for (size_t i = 0; i < names.size(); ++i) result.by_name[i].name = run.strings.get(names[i]);
  std::stable_sort(result.by_name.begin(), result.by_name.end(),
                   [](const KernelNameStats& a, const KernelNameStats& b) {
                     return a.time.total_ns > b.time.total_ns;
                   });
  return result;
}

}  // namespace stepscope
