// Huge-page advice on large arrays: reservations keep their size and
// contents, growth past them re-advises, and on Linux the kernel marks the
// advised memory (VmFlags "hg" in /proc/self/smaps).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "util/huge_pages.hpp"

namespace stepscope {
namespace {

// The VmFlags of the mapping holding `address`, or "" when unknown.
std::string vm_flags_at(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= target && target < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return {};
}

TEST(HugePages, ReserveKeepsTheRequestedRoom) {
  std::vector<uint64_t> items;
  reserve_with_huge_pages(items, 3 << 20);
  EXPECT_GE(items.capacity(), size_t{3} << 20);
  EXPECT_TRUE(items.empty());
  std::vector<int> small;
  reserve_with_huge_pages(small, 3);  // below the threshold: only reserved
  EXPECT_GE(small.capacity(), 3u);
}

TEST(HugePages, MakeRoomGrowsAndKeepsContents) {
  std::vector<uint32_t> items;
  for (uint32_t i = 0; i < 5'000'000; ++i) {
    make_room_with_huge_pages(items);
    size_t capacity = items.capacity();
    items.push_back(i);
    ASSERT_EQ(items.capacity(), capacity) << "push_back must not grow on its own";
  }
  for (uint32_t i = 0; i < items.size(); i += 4999) ASSERT_EQ(items[i], i);
}

TEST(HugePages, AdvisedMemoryIsMarkedByTheKernel) {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!mode) GTEST_SKIP() << "no transparent huge pages here";
  std::vector<char> bytes;
  reserve_with_huge_pages(bytes, kHugePageAdviceMinBytes + (size_t{4} << 20));
  // A byte in the first whole 2 MiB block of the buffer.
  auto block = (reinterpret_cast<uintptr_t>(bytes.data()) + (uintptr_t{2} << 20) - 1) & ~((uintptr_t{2} << 20) - 1);
  std::string flags = vm_flags_at(reinterpret_cast<const void*>(block));
  if (flags.empty()) GTEST_SKIP() << "/proc/self/smaps not readable";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  // Memory outside the advised blocks is left alone (malloc's header).
  EXPECT_EQ(vm_flags_at(bytes.data()).find(" hg"), std::string::npos) << vm_flags_at(bytes.data());
}

TEST(HugePages, AdviceOnNothingOrLittleIsHarmless) {
  advise_huge_pages(nullptr, size_t{64} << 20);
  int one = 1;
  advise_huge_pages(&one, sizeof(one));
  EXPECT_EQ(one, 1);
}
}  // namespace
}  // namespace stepscope
