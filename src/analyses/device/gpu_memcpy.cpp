// Copies and memsets by direction, with bytes and achieved bandwidth.
#include <algorithm>

#include "analyses/device/gpu.hpp"

namespace stepscope {

// Kineto names copies "Memcpy HtoD (Pageable -> Device)", ROCm the same;
// HTA's get_memory_kernel_type reads the same prefix.
std::string memcpy_direction(SpanKind kind, std::string_view name) {
  if (kind == SpanKind::kMemset || name.starts_with("Memset")) return "memset";
  if (name.starts_with("Memcpy ") && name.size() >= 11) {
    std::string_view direction = name.substr(7, 4);
    for (std::string_view known : {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"}) {
      if (direction == known) return std::string(direction);
    }
  }
  return "unknown";
}

bool is_pageable_memcpy(std::string_view name, std::string_view detail) {
  return name.find("Pageable") != std::string_view::npos || detail.find("Pageable") != std::string_view::npos;
}

std::optional<double> MemcpyDirection::bandwidth_gbps() const {
  if (bytes <= 0 || timed_bytes_ns <= 0) return std::nullopt;
  return static_cast<double>(bytes) / static_cast<double>(timed_bytes_ns);  // bytes/ns = GB/s
}

GpuMemcpy gpu_memcpy(const Run& run, const DeviceActivity& activity) {
  GpuMemcpy result;
  for (const DeviceEvent& event : activity.events) {
    if (event.kind != KernelClass::kMemory) continue;
    const Span& span = run.spans[event.span];
    std::string direction = memcpy_direction(span.kind, run.strings.get(span.name));
    auto found = std::find_if(result.directions.begin(), result.directions.end(),
                              [&](const MemcpyDirection& d) { return d.direction == direction; });
    if (found == result.directions.end()) {
      result.directions.push_back({.direction = direction});
      found = result.directions.end() - 1;
    }
    int64_t ns = span.end_ns - span.start_ns;
    found->count++;
    found->total_ns += ns;
    if (span.bytes > 0) {
      found->bytes += span.bytes;
      found->timed_bytes_ns += ns;
    }
    if (direction == "memset") continue;
    if (is_pageable_memcpy(run.strings.get(span.name), run.strings.get(span.detail))) {
      found->pageable++;
      found->pageable_ns += ns;
    }
    if (span.bytes > 0 && span.bytes < kSmallMemcpyBytes) {
      found->small++;
      found->small_ns += ns;
    }
  }
  std::stable_sort(result.directions.begin(), result.directions.end(),
                   [](const MemcpyDirection& a, const MemcpyDirection& b) { return a.total_ns > b.total_ns; });
  return result;
}

}  // namespace stepscope
