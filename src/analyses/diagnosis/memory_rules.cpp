// memory_pressure: a job whose peak memory is near capacity is one larger
// batch, one longer sequence or one more worker away from an out-of-memory
// failure (or, on the host, from swapping). It is a risk, not a cost in
// time, so the finding carries no speedup.
#include <algorithm>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"

namespace stepscope {

namespace {

// Gibibytes, or mebibytes below one (a container's limit is often a few hundred).
std::string gib(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (bytes < 1024 * kMiB) return fmt::format("{:.0f} MiB", bytes / kMiB);
  return fmt::format("{:.1f} GiB", bytes / (1024 * kMiB));
}

// "443 MiB of 512 MiB (87%)", and in a container which capacity that is:
// ", the limit of the memory cgroup (the machine has 23.6 GiB)".
std::string of_capacity(const DiagnosisFacts& f, double bytes, double share, double capacity) {
  std::string text = fmt::format("{} of {} ({})", gib(bytes), gib(capacity), percent_text(share));
  if (!f.capacity_is_cgroup_limit()) return text;
  text += ", the limit of the memory cgroup";
  if (f.memory_total_bytes) text += fmt::format(" (the machine has {})", gib(*f.memory_total_bytes));
  return text;
}

// The host: the recorded tree's resident memory at its peak, and the least
// memory it had left, against what it can have (in a container, the memory
// cgroup's limit, past which the OOM killer ends the job whatever MemTotal says).
std::optional<double> host_pressure(const DiagnosisFacts& f, std::vector<std::string>& evidence) {
  auto capacity = f.host_memory_capacity();
  if (!capacity || *capacity <= 0) return std::nullopt;
  double total = *capacity;
  double worst = 0;
  bool pressed = false;
  if (f.peak_tree_rss_bytes) {
    double peak = *f.peak_tree_rss_bytes / total;
    if (peak >= kHostMemoryPeak) {
      pressed = true;
      evidence.push_back("the recorded processes' resident memory peaked at " +
                         of_capacity(f, *f.peak_tree_rss_bytes, peak, total));
    }
    worst = std::max(worst, peak);
  }
  if (f.min_memory_available_bytes) {
    double available = *f.min_memory_available_bytes / total;
    if (available <= kHostMemoryAvailable) {
      pressed = true;
      evidence.push_back(fmt::format("{} dropped to {}",
                                     f.min_available_in_cgroup ? "the room left below the memory cgroup's limit"
                                                               : "the system's available memory",
                                     of_capacity(f, *f.min_memory_available_bytes, available, total)));
    }
    worst = std::max(worst, 1 - available);
  }
  return pressed ? std::optional<double>(worst) : std::nullopt;
}

// The device as a trace's memory events show it: the caching allocator's
// peak reservation (what it holds from the GPU, the allocated tensors and
// its cache), against the GPU's memory. Reserved is what the next cudaMalloc
// competes with; the allocated peak is quoted beside it.
std::optional<double> allocator_pressure(const DiagnosisFacts& f, std::vector<std::string>& evidence) {
  std::optional<double> worst;
  for (const DiagnosisFacts::AllocatorPeak& p : f.allocator_peaks) {
    if (!p.capacity_bytes || *p.capacity_bytes <= 0) continue;
    double share = std::max(p.allocated_bytes, p.reserved_bytes) / *p.capacity_bytes;
    if (share >= kDeviceMemoryPeak) {
      evidence.push_back(fmt::format(
          "GPU {} (process {}): PyTorch's allocator reserved up to {} of {} ({}), tensors took up to {} ({})", p.gpu,
          p.pid, gib(p.reserved_bytes), gib(*p.capacity_bytes), percent_text(p.reserved_bytes / *p.capacity_bytes),
          gib(p.allocated_bytes), percent_text(p.allocated_bytes / *p.capacity_bytes)));
    }
    worst = std::max(worst.value_or(0), share);
  }
  return worst;
}

// The device: the step's peak allocation (hooks) or the GPU's peak used
// memory (NVML, which also counts the allocator's cache and the context),
// against the GPU's memory.
std::optional<double> device_pressure(const DiagnosisFacts& f, std::vector<std::string>& evidence) {
  double worst = allocator_pressure(f, evidence).value_or(0);
  double total = 0;
  for (auto [index, bytes] : f.gpu_memory_total_bytes) total = total == 0 ? bytes : std::min(total, bytes);
  if (total > 0 && f.primary && f.primary->peak_device_bytes) {
    double share = static_cast<double>(*f.primary->peak_device_bytes) / total;
    if (share >= kDeviceMemoryPeak) {
      evidence.push_back(fmt::format("tensors peaked at {} of the GPU's {} ({}) in a step",
                                     gib(static_cast<double>(*f.primary->peak_device_bytes)), gib(total),
                                     percent_text(share)));
    }
    worst = std::max(worst, share);
  }
  for (auto [index, used] : f.gpu_memory_peak_used_bytes) {
    if (total <= 0) break;
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
