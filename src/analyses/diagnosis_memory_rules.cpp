// memory_pressure: a job whose peak memory is near capacity is one larger
// batch, one longer sequence or one more worker away from an out-of-memory
// failure (or, on the host, from swapping). It is a risk, not a cost in
// time, so the finding carries no speedup.
#include <algorithm>

#include <fmt/format.h>

#include "analyses/diagnosis_rules.hpp"

namespace stepscope {

namespace {

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

// The host: the recorded tree's resident memory at its peak, and the least
// memory the system had available.
std::optional<double> host_pressure(const DiagnosisFacts& f, std::vector<std::string>& evidence) {
  if (!f.memory_total_bytes || *f.memory_total_bytes <= 0) return std::nullopt;
  double total = *f.memory_total_bytes;
  double worst = 0;
  if (f.peak_tree_rss_bytes) {
    double peak = *f.peak_tree_rss_bytes / total;
    if (peak >= kHostMemoryPeak) {
      evidence.push_back(fmt::format("the recorded processes' resident memory peaked at {} of {} ({})",
                                     gib(*f.peak_tree_rss_bytes), gib(total), percent_text(peak)));
    }
    worst = std::max(worst, peak);
  }
  if (f.min_memory_available_bytes) {
    double available = *f.min_memory_available_bytes / total;
    if (available <= kHostMemoryAvailable) {
      evidence.push_back(fmt::format("the system had as little as {} of {} available ({})",
                                     gib(*f.min_memory_available_bytes), gib(total), percent_text(available)));
    }
    worst = std::max(worst, 1 - available);
  }
  bool pressed = (f.peak_tree_rss_bytes && *f.peak_tree_rss_bytes / total >= kHostMemoryPeak) ||
                 (f.min_memory_available_bytes && *f.min_memory_available_bytes / total <= kHostMemoryAvailable);
  return pressed ? std::optional<double>(worst) : std::nullopt;
}

// The device: the step's peak allocation (hooks) or the GPU's peak used
// memory (NVML, which also counts the allocator's cache and the context),
// against the GPU's memory.
std::optional<double> device_pressure(const DiagnosisFacts& f, std::vector<std::string>& evidence) {
  if (f.gpu_memory_total_bytes.empty()) return std::nullopt;
  double total = 0;
  for (auto [index, bytes] : f.gpu_memory_total_bytes) total = total == 0 ? bytes : std::min(total, bytes);
  if (total <= 0) return std::nullopt;
  double worst = 0;
  if (f.primary && f.primary->peak_device_bytes) {
    double share = static_cast<double>(*f.primary->peak_device_bytes) / total;
    if (share >= kDeviceMemoryPeak) {
      evidence.push_back(fmt::format("tensors peaked at {} of the GPU's {} ({}) in a step",
                                     gib(static_cast<double>(*f.primary->peak_device_bytes)), gib(total),
                                     percent_text(share)));
    }
    worst = std::max(worst, share);
  }
  for (auto [index, used] : f.gpu_memory_peak_used_bytes) {
    double share = used / total;
    if (share >= kDeviceMemoryPeak) {
      evidence.push_back(fmt::format("GPU {} had {} of {} in use at its peak ({}, NVML)", index, gib(used), gib(total),
                                     percent_text(share)));
    }
    worst = std::max(worst, share);
  }
  return worst >= kDeviceMemoryPeak ? std::optional<double>(worst) : std::nullopt;
}

}  // namespace

std::optional<Finding> memory_pressure_rule(const DiagnosisInput&, const DiagnosisFacts& f) {
  std::vector<std::string> evidence;
  auto host = host_pressure(f, evidence);
  auto device = device_pressure(f, evidence);
  if (!host && !device) return std::nullopt;
  Finding out;
  out.id = "memory_pressure";
  double worst = std::max(host.value_or(0), device.value_or(0));
  out.severity = worst >= 0.95 ? Severity::kHigh : Severity::kMedium;
  out.title = fmt::format("Memory pressure: {} memory peaks at {} of capacity", device ? "device" : "host",
                          percent_text(device ? *device : *host));
  out.evidence = std::move(evidence);
  std::string remedy;
  if (device) {
    remedy = "On the GPU: mixed precision (torch.autocast with bfloat16), activation checkpointing, a smaller "
             "micro-batch with gradient accumulation, an 8-bit optimizer, or sharding (FSDP, ZeRO).";
  }
  if (host) {
    if (!remedy.empty()) remedy += " ";
    remedy += "On the host: fewer DataLoader workers or a lower prefetch_factor; keep the data set in NumPy "
              "arrays or memory-mapped files instead of Python lists and dicts (which each forked worker "
              "slowly copies); free what set-up no longer needs.";
  }
  out.recommendation = remedy;
  return out;
}

}  // namespace stepscope
