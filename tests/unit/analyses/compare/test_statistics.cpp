// The bootstrap behind compare: deterministic, right on known data, and a
// false-alarm rate near its significance level on synthetic step times.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "analyses/compare/compare.hpp"
#include "analyses/compare/statistics.hpp"
#include "recorded_step_times.hpp"

namespace stepscope {
namespace {

constexpr double kPi = 3.14159265358979323846;

double normal(SplitMix64& rng) {
  double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * kPi * u2);
}

// Step times like a real loop: log-normal around 20 ms, with the odd slow
// step (a GC pause, a checkpoint) in the heavy tail.
double step_time_ms(SplitMix64& rng) {
  double ms = 20.0 * std::exp(0.1 * normal(rng));
  if (rng.uniform() < 0.05) ms *= 3;
  return ms;
}

std::vector<RatioPoint> steps(SplitMix64& rng, size_t n, double factor,
                              const std::function<double(SplitMix64&)>& draw = step_time_ms) {
  std::vector<RatioPoint> out;
  for (size_t i = 0; i < n; ++i) out.push_back({draw(rng) * factor, 1});
  return out;
}

TEST(Bootstrap, RatioOfSums) {
  EXPECT_DOUBLE_EQ(ratio_of_sums({{10, 1}, {20, 1}, {30, 1}}), 20);
  EXPECT_DOUBLE_EQ(ratio_of_sums({{64, 0.5}, {64, 1.5}}), 64);  // samples / seconds
  EXPECT_DOUBLE_EQ(ratio_of_sums({}), 0);
}

TEST(Bootstrap, SameInputSameInterval) {
  SplitMix64 rng(1);
  auto a = steps(rng, 40, 1), b = steps(rng, 30, 1.1);
  ConfidenceInterval first = bootstrap_relative_change(a, b, {});
  ConfidenceInterval second = bootstrap_relative_change(a, b, {});
  EXPECT_EQ(first.low, second.low);
  EXPECT_EQ(first.high, second.high);
  EXPECT_LE(first.low, first.estimate);
  EXPECT_GE(first.high, first.estimate);
}

TEST(Bootstrap, ConstantStepsHaveAPointInterval) {
  std::vector<RatioPoint> base(10, {20, 1}), cur(12, {26, 1});
  ConfidenceInterval change = bootstrap_relative_change(base, cur, {});
  EXPECT_DOUBLE_EQ(change.estimate, 0.3);
  EXPECT_DOUBLE_EQ(change.low, 0.3);
  EXPECT_DOUBLE_EQ(change.high, 0.3);
}

TEST(Bootstrap, IntervalOfAMeanCoversTheTruth) {
  // The mean of the step-time model, computed from the model: 20 ms times
  // E[exp(0.1 Z)] = exp(0.005), times 1 + 0.05 * 2 for the slow steps.
  double truth = 20.0 * std::exp(0.005) * 1.1;
  SplitMix64 rng(7);
  int covered = 0, trials = 200;
  BootstrapOptions options{.confidence = 0.9, .resamples = 500};
  for (int t = 0; t < trials; ++t) {
    ConfidenceInterval i = bootstrap_ratio(steps(rng, 50, 1), options);
    if (i.low <= truth && truth <= i.high) ++covered;
  }
  double coverage = static_cast<double>(covered) / trials;
  EXPECT_GT(coverage, 0.82);
  EXPECT_LT(coverage, 0.96);
}

// Pairs of runs of the same program (same distribution): how often does
// compare's rule say "significant"? It must stay near alpha = 1 - confidence.
double false_alarm_rate(size_t n_base, size_t n_cur, const std::function<double(SplitMix64&)>& draw) {
  SplitMix64 rng(42);
  BootstrapOptions options{.confidence = 0.95, .resamples = 1000};
  int alarms = 0, pairs = 400;
  for (int t = 0; t < pairs; ++t) {
    auto base = steps(rng, n_base, 1, draw), cur = steps(rng, n_cur, 1, draw);
    double p = permutation_p_value(base, cur, options.resamples, options.seed + static_cast<uint64_t>(t));
    if (decide(bootstrap_relative_change(base, cur, {.resamples = 0}), p, 0.05, false, 0) !=
        Verdict::kNoSignificantChange) {
      ++alarms;
    }
  }
  return static_cast<double>(alarms) / pairs;
}

TEST(Bootstrap, FalseAlarmRateStaysNearAlpha) {
  double rate = false_alarm_rate(40, 40, step_time_ms);
  EXPECT_GT(rate, 0.01) << "intervals far too wide";
  EXPECT_LT(rate, 0.09) << "false alarms well above alpha = 0.05";
}

TEST(Bootstrap, FalseAlarmRateWithUnequalStepCounts) {
  double rate = false_alarm_rate(25, 80, step_time_ms);
  EXPECT_LT(rate, 0.09);
}

TEST(Bootstrap, FalseAlarmRateOnBimodalSteps) {
  // Two kinds of steps (every fourth one logs or evaluates): not normal at all.
  auto bimodal = [](SplitMix64& rng) { return (rng.uniform() < 0.25 ? 50.0 : 10.0) + rng.uniform(); };
  double rate = false_alarm_rate(40, 40, bimodal);
  EXPECT_LT(rate, 0.09);
}

TEST(Bootstrap, FalseAlarmRateOnRecordedStepTimes) {
  // Pairs of runs drawn from the step times of a real recording.
  auto recorded = [](SplitMix64& rng) {
    return fixtures::kRecordedStepTimesMs[rng.below(fixtures::kRecordedStepTimesMs.size())];
  };
  EXPECT_LT(false_alarm_rate(40, 40, recorded), 0.09);
  EXPECT_LT(false_alarm_rate(20, 60, recorded), 0.09);
}

// Power on steady steps (log-normal, 10% spread, no slow outliers: with 5%
// of steps 3x slower the mean of 40 steps itself wanders by about 6%, and
// no method can resolve 3% from such runs).
TEST(Bootstrap, FindsAThirtyPercentSlowdownAndIgnoresThreePercent) {
  SplitMix64 rng(3);
  auto steady = [](SplitMix64& r) { return 20.0 * std::exp(0.1 * normal(r)); };
  int found = 0, flagged_small = 0, trials = 50;
  for (int t = 0; t < trials; ++t) {
    auto base = steps(rng, 40, 1, steady);
    for (double factor : {1.3, 1.03}) {
      auto cur = steps(rng, 40, factor, steady);
      double p = permutation_p_value(base, cur, 1000, 9);
      ConfidenceInterval change = bootstrap_relative_change(base, cur, {.resamples = 1000});
      bool regressed = decide(change, p, 0.05, false, 0.05) == Verdict::kRegressed;
      (factor > 1.1 ? found : flagged_small) += regressed ? 1 : 0;
    }
  }
  EXPECT_EQ(found, trials);
  EXPECT_LE(flagged_small, 2);
}

TEST(Decide, NeedsSignificanceAndAnIntervalBeyondTheThreshold) {
  EXPECT_EQ(decide({0.10, 0.06, 0.14}, 0.01, 0.05, false, 0.05), Verdict::kRegressed);
  EXPECT_EQ(decide({0.10, 0.06, 0.14}, 0.20, 0.05, false, 0.05), Verdict::kNoSignificantChange);
  EXPECT_EQ(decide({0.06, 0.02, 0.10}, 0.01, 0.05, false, 0.05), Verdict::kInconclusive);
  EXPECT_EQ(decide({0.03, 0.01, 0.045}, 0.01, 0.05, false, 0.05), Verdict::kWithinThreshold);
  EXPECT_EQ(decide({-0.10, -0.14, -0.06}, 0.01, 0.05, false, 0.05), Verdict::kImproved);
  // Higher is better (throughput): a drop is the regression.
  EXPECT_EQ(decide({-0.10, -0.14, -0.06}, 0.01, 0.05, true, 0.05), Verdict::kRegressed);
  EXPECT_EQ(decide({0.10, 0.06, 0.14}, 0.01, 0.05, true, 0.05), Verdict::kImproved);
  // Without a p-value (peak memory) any change is real; the threshold decides.
  EXPECT_EQ(decide({0.2, 0.2, 0.2}, std::nullopt, 0, false, 0.05), Verdict::kRegressed);
  EXPECT_EQ(decide({0.02, 0.02, 0.02}, std::nullopt, 0, false, 0.05), Verdict::kWithinThreshold);
  EXPECT_EQ(decide({0, 0, 0}, std::nullopt, 0, false, 0.05), Verdict::kNoSignificantChange);
}

TEST(Permutation, ConstantRunsAreIdenticalOrClearlyApart) {
  std::vector<RatioPoint> base(10, {20, 1}), same(12, {20, 1}), slower(12, {26, 1});
  EXPECT_DOUBLE_EQ(permutation_p_value(base, same, 500, 1), 1.0);
  EXPECT_LT(permutation_p_value(base, slower, 500, 1), 0.01);
  EXPECT_DOUBLE_EQ(permutation_p_value({{20, 1}}, slower, 500, 1), 1.0);  // too few steps to tell
}

}  // namespace
}  // namespace stepscope
