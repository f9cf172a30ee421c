// Walking a large table in the order of a list of its ids (a thread's spans
// in nesting order, flow endpoints by flow) misses the cache wherever the ids
// jump, and each miss waits for the one before: the walk is bound by memory
// latency. Asking for the element a few steps ahead overlaps the misses.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace stepscope {

// Steps ahead: enough to cover a miss at a few nanoseconds of work per step.
inline constexpr size_t kPrefetchAhead = 16;

// Hints that table[ids[at + kPrefetchAhead]] will be read soon (nothing past the end).
template <typename T, typename Id>
inline void prefetch_ahead(const std::vector<T>& table, std::span<const Id> ids, size_t at) {
  if (at + kPrefetchAhead < ids.size()) __builtin_prefetch(&table[ids[at + kPrefetchAhead]]);
}

}  // namespace stepscope
