#include "importers/chrome_category.hpp"

#include <algorithm>
#include <array>

#include "importers/json_text.hpp"

namespace stepscope {

// Category names come from Kineto's ActivityType names (libkineto
// ActivityType.cpp) and from the traces in testdata: CUDA and ROCm both use
// the cuda_* names, MTIA uses mtia_runtime and mtia_ccp_events (its device
// activity), other backends <name>_runtime/<name>_driver. PyTorch 1.8-era
// Kineto used capitalised names ("Operator", "Kernel", "Runtime", "Memcpy"),
// hence the case-insensitive match.
SpanKind chrome_category_kind(std::string_view category, std::string_view process_name) {
  if (category.empty()) {
    // The legacy autograd profiler: no categories, pid names the side.
    if (iequals(process_name, "CPU functions")) return SpanKind::kCpuOp;
    if (iequals(process_name, "CUDA functions")) return SpanKind::kKernel;
    return SpanKind::kOther;
  }
  if (iequals(category, "cpu_op") || iequals(category, "operator")) return SpanKind::kCpuOp;
  if (iequals(category, "user_annotation")) return SpanKind::kUserRange;
  if (iequals(category, "gpu_user_annotation")) return SpanKind::kDeviceAnnotation;
  if (iequals(category, "python_function")) return SpanKind::kPythonFunction;
  if (iequals(category, "cuda_sync")) return SpanKind::kSync;
  if (iequals(category, "runtime") || iends_with(category, "_runtime") || iends_with(category, "_driver")) {
    return SpanKind::kRuntimeCall;
  }
  if (iequals(category, "kernel") || iends_with(category, "_ccp_events")) return SpanKind::kKernel;
  if (iequals(category, "gpu_memcpy") || iequals(category, "memcpy")) return SpanKind::kMemcpy;
  if (iequals(category, "gpu_memset") || iequals(category, "memset")) return SpanKind::kMemset;
  return SpanKind::kOther;
}

bool is_known_chrome_category(std::string_view category) {
  // Kineto's ActivityType names and trace categories that are not analysed
  // as a kind of their own; flow categories too (ac2g, fwdbwd, ...).
  static constexpr std::array<std::string_view, 16> kKnownOther = {
      "Trace",        "overhead",   "cpu_instant_event", "external_correlation", "cuda_profiler_range",
      "collective_comm", "hpu_op",  "critical_path",     "ac2g",                 "fwdbwd",
      "async_cpu_to_gpu", "Iteration", "Mark",           "gpu_instant_event",    "kernel_launch",
      "flow"};
  if (category.empty() || chrome_category_kind(category) != SpanKind::kOther) return true;
  // stepscope's own exports (export --format perfetto) name the run format's
  // other kinds ("step", "data_wait", ...); they read back as kind other.
  if (span_kind_from_name(category)) return true;
  return std::any_of(kKnownOther.begin(), kKnownOther.end(),
                     [&](std::string_view known) { return iequals(known, category); });
}

}  // namespace stepscope
