// A lookup made for every sample of a run (tens of millions in an hour of
// eight ranks) among a few keys (its processes, its threads): a small
// direct-mapped cache of the answers in front of whatever finds them, each
// slot checked against its key. Where a hash table's lookup a sample was a
// tenth of a whole run's report.
#pragma once

#include <array>
#include <cstddef>
#include <functional>

namespace stepscope {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class RecentAnswers {
 public:
  // The answer for `key`: the cached one, else answer(key), then cached.
  // Answers must not change while the cache lives.
  template <typename Answer>
  const Value& get(const Key& key, Answer answer) {
    Slot& slot = slots_[Hash{}(key) % kSlots];
    if (!slot.filled || !(slot.key == key)) {
      slot.value = answer(key);
      slot.key = key;
      slot.filled = true;
    }
    return slot.value;
  }

 private:
  static constexpr size_t kSlots = 64;
  struct Slot {
    Key key{};
    Value value{};
    bool filled = false;
  };
  std::array<Slot, kSlots> slots_{};
};

}  // namespace stepscope
