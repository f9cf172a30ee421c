// Transparent huge pages for the few large arrays that are filled once and
// kept (an imported trace's spans): each first touch of a 4 KiB page costs a
// page fault, and a Run of millions of spans takes tens of thousands of them.
// Where the kernel's THP mode is "madvise", asking for huge pages on such an
// array makes that one fault per 2 MiB (and fewer TLB misses for whoever
// reads it). The kernel still zeroes every page it hands out: on the VM this
// was measured on, zeroing 2 MiB at once cost about what the fewer faults
// saved (bench/README.md, "Trace import"). Memory that is reserved but never
// touched still costs nothing.
#pragma once

#include <cstddef>
#include <vector>

namespace stepscope {

// Smaller arrays gain little, and the last huge page of each, partly
// filled, would be a noticeable share of them (a report of four 15 MB
// traces peaked 10 % higher with advice from 4 MiB).
inline constexpr size_t kHugePageAdviceMinBytes = size_t{32} << 20;

// Advises the kernel to back the whole 2 MiB blocks inside [data, data +
// bytes) with huge pages (madvise MADV_HUGEPAGE). Only advice: does nothing
// where the kernel or platform does not support it, or below
// kHugePageAdviceMinBytes; never fails.
void advise_huge_pages(const void* data, size_t bytes) noexcept;

// Reserves room for `count` elements and advises huge pages on all of it.
// The advice stays with the memory, so it holds as long as the vector does
// not grow past `count` (growing moves it to a fresh, unadvised buffer).
template <typename T>
void reserve_with_huge_pages(std::vector<T>& items, size_t count) {
  items.reserve(count);
  advise_huge_pages(items.data(), items.capacity() * sizeof(T));
}

// Before appending one element: when `items` is full, doubles its room
// with huge pages advised on the new buffer (plain growth would leave a
// vector that outgrew its reservation on 4 KiB pages).
template <typename T>
void make_room_with_huge_pages(std::vector<T>& items) {
  if (items.size() < items.capacity()) return;
  reserve_with_huge_pages(items, items.capacity() < 16 ? 16 : 2 * items.capacity());
}

}  // namespace stepscope
