#include "util/huge_pages.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace stepscope {

namespace {

// The x86-64 and arm64 (4 KiB base pages) huge page size.
constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

}  // namespace

void advise_huge_pages(const void* data, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (data == nullptr || bytes < kHugePageAdviceMinBytes) return;
  // Only whole aligned 2 MiB blocks can be huge pages; advising just those
  // leaves the neighbours of the array (malloc's header, other data) alone.
  auto begin = reinterpret_cast<uintptr_t>(data);
  uintptr_t first = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  uintptr_t last = (begin + bytes) & ~(kHugePageBytes - 1);
  if (first >= last) return;
  // Advice only: EINVAL (THP "never", or not compiled in) changes nothing.
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace stepscope
