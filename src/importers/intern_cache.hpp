// A cache in front of StringTable::intern for the names a trace repeats
// millions of times (operators, runtime calls, kernels whose names run to
// hundreds of bytes): a direct-mapped table keyed by a fingerprint of a few
// bytes, so a repeated name costs one compare instead of hashing all of it
// and probing the table's hash map.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "run/string_table.hpp"

namespace stepscope {

class InternCache {
 public:
  explicit InternCache(StringTable& strings) : strings_(strings) {}

  StringId intern(std::string_view text) {
    if (text.empty()) return StringTable::kEmpty;
    Entry& entry = entries_[slot_of(text)];
    if (entry.text.size() == text.size() && std::memcmp(entry.text.data(), text.data(), text.size()) == 0) {
      return entry.id;
    }
    entry.id = strings_.intern(text);
    entry.text = strings_.get(entry.id);  // the table's copy: stable, unlike `text`
    return entry.id;
  }

 private:
  static constexpr size_t kSlots = 4096;

  struct Entry {
    std::string_view text;
    StringId id = StringTable::kEmpty;
  };

  // Length, the first and the last 8 bytes: names of one trace differ there
  // (a miss only costs a full intern).
  static size_t slot_of(std::string_view text) {
    uint64_t head = 0;
    uint64_t tail = 0;
    size_t n = text.size();
    std::memcpy(&head, text.data(), n < 8 ? n : 8);
    if (n > 8) std::memcpy(&tail, text.data() + n - 8, 8);
    uint64_t mixed = (head * 0x9E3779B97F4A7C15ULL) ^ (tail * 0xC2B2AE3D27D4EB4FULL) ^ (n * 0x165667B19E3779F9ULL);
    return static_cast<size_t>(mixed >> 52) & (kSlots - 1);
  }

  StringTable& strings_;
  std::array<Entry, kSlots> entries_{};
};

}  // namespace stepscope
