// Which of several ranks stand out as slow: the one rule behind the trace
// comparison's stragglers (rank_comparison) and a recording's steps per
// process (steps), so both call the same ranks stragglers.
//
// Rule (robust to the stragglers themselves): a rank is a straggler when its
// value exceeds the median over ranks by more than max(kStragglerTolerance x
// median, 3 x 1.4826 x MAD), the MAD (median absolute deviation) term only
// with three or more ranks. Only the slow side counts: a fast rank is waited
// for by no one.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace stepscope {

inline constexpr double kStragglerTolerance = 0.05;

struct Stragglers {
  std::optional<double> median;     // over the known values; none below two
  std::optional<double> threshold;  // a value above this is a straggler
  std::vector<size_t> indexes;      // into the values, in order
};

// The median of `values`, which must not be empty.
double median_of(std::vector<double> values);

// `values` per rank, nullopt where a rank has none.
Stragglers find_stragglers(const std::vector<std::optional<double>>& values);

}  // namespace stepscope
