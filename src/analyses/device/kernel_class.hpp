// What a piece of device activity is for, from its kind and name, with
// Holistic Trace Analysis's rules (hta/utils/utils.py get_kernel_type), made
// vendor-neutral: communication is a collective library's kernel (NCCL, RCCL,
// HCCL), memory is a copy, a memset or DMA, computation is every other kernel
// except the few HTA sets apart as "other" (names with Memcpy or Sync inside).
#pragma once

#include <cstdint>
#include <string_view>

#include "run/run.hpp"

namespace stepscope {

enum class KernelClass : uint8_t { kCommunication, kMemory, kComputation, kOther };
inline constexpr size_t kKernelClassCount = 4;
const char* kernel_class_name(KernelClass kind);

KernelClass classify_kernel(SpanKind kind, std::string_view name);

}  // namespace stepscope
