// A thread of a run as (pid, tid), and a hash for it: the analyses that look
// one up for every sample of a run (17 M in an hour of 8 ranks) use hash
// tables, where a tree took a walk per sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace stepscope {

using ThreadKey = std::pair<int64_t, int64_t>;

struct ThreadKeyHash {
  size_t operator()(const ThreadKey& thread) const {
    return std::hash<uint64_t>{}(static_cast<uint64_t>(thread.first) * 0x9e3779b97f4a7c15ULL ^
                                 static_cast<uint64_t>(thread.second));
  }
};

}  // namespace stepscope
