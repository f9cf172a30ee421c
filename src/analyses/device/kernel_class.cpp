#include "analyses/device/kernel_class.hpp"

#include <algorithm>
#include <cctype>

namespace stepscope {

const char* kernel_class_name(KernelClass kind) {
  switch (kind) {
    case KernelClass::kCommunication:
      return "communication";
    case KernelClass::kMemory:
      return "memory";
    case KernelClass::kComputation:
      return "computation";
    case KernelClass::kOther:
      break;
  }
  return "other";
}

namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

// HTA: ^nccl.*Kernel. RCCL keeps NCCL's kernel names; HCCL is Habana's and
// Ascend's collective library.
bool is_collective(std::string_view name) {
  bool library = starts_with_nocase(name, "nccl") || starts_with_nocase(name, "rccl") ||
                 starts_with_nocase(name, "hccl");
  return library && name.find("Kernel", 4) != std::string_view::npos;
}

}  // namespace

KernelClass classify_kernel(SpanKind kind, std::string_view name) {
  if (is_collective(name)) return KernelClass::kCommunication;
  if (kind == SpanKind::kMemcpy || kind == SpanKind::kMemset || name.starts_with("Memcpy") ||
      name.starts_with("Memset") || name.starts_with("dma")) {
    return KernelClass::kMemory;
  }
  // HTA's computation test also excludes these (NCCL_COMPUTE_KERNEL_RE).
  if (name.find("Memcpy") != std::string_view::npos || name.find("Sync") != std::string_view::npos) {
    return KernelClass::kOther;
  }
  return KernelClass::kComputation;
}

}  // namespace stepscope
