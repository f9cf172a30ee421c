// Distribution-free statistics on per-step values, for compare and sweep.
// Every per-step metric is a ratio of sums (sum x / sum y over the steps):
// mean step time is sum(time) / sum(1); samples per second is
// sum(samples) / sum(seconds).
//
//  * Significance: a permutation test of "both runs' steps come from one
//    distribution". Its false-alarm rate is the chosen level whatever the
//    distribution (heavy tails, several modes), which a bootstrap interval
//    does not guarantee with few steps and rare slow ones.
//  * Size: a percentile bootstrap interval of the relative change, each run
//    resampled on its own, so runs with different step counts compare.
//
// Generators are seeded, so the same inputs always give the same answer (a
// CI gate must not flip on a rerun of the same files).
#pragma once

#include <cstdint>
#include <vector>

namespace stepscope {

struct RatioPoint {
  double x = 0;  // numerator of one step (time, samples, ...)
  double y = 1;  // denominator of one step (1, seconds, ...)
};

struct BootstrapOptions {
  double confidence = 0.95;
  uint32_t resamples = 2000;     // bootstrap resamples, and permutations of the test
  uint64_t seed = 0x5eed5eedULL;
};

struct ConfidenceInterval {
  double estimate = 0;  // the statistic on the data itself
  double low = 0, high = 0;
};

// sum x / sum y; 0 when sum y is 0.
double ratio_of_sums(const std::vector<RatioPoint>& points);

// The interval of ratio_of_sums over `points`.
ConfidenceInterval bootstrap_ratio(const std::vector<RatioPoint>& points, const BootstrapOptions& options);

// The interval of the relative change cur / base - 1 of ratio_of_sums.
ConfidenceInterval bootstrap_relative_change(const std::vector<RatioPoint>& base,
                                   const std::vector<RatioPoint>& cur,
                                   const BootstrapOptions& options);

// Two-sided p-value of the observed relative change of ratio_of_sums, from
// `permutations` random relabelings of the pooled steps ((1 + hits) / (1 +
// permutations), so never 0). 1 when either side has fewer than 2 steps.
double permutation_p_value(const std::vector<RatioPoint>& base, const std::vector<RatioPoint>& cur,
                           uint32_t permutations, uint64_t seed);

// A small, fast generator with a fixed, portable sequence (std's
// distributions are not portable across standard libraries).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n), n > 0 (modulo: its bias, n / 2^64, is negligible here).
  uint64_t below(uint64_t n);
  double uniform();  // [0, 1)

 private:
  uint64_t state_;
};

}  // namespace stepscope
