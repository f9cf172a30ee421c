// The steps analysis on hand-made runs: phases, other, warm-up, rates,
// percentiles, memory, ranks, and sample attribution.
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "analyses/job_ranks.hpp"
#include "analyses/steps/steps.hpp"
#include "renderers/report/steps_text.hpp"

namespace {

using stepscope::SpanKind;
using stepscope::StepPhase;

constexpr int64_t kMs = 1'000'000;

struct StepBuilder {
  stepscope::Run run;
  std::map<std::pair<std::string, int64_t>, uint32_t> tracks;

  void span(int64_t pid, SpanKind kind, int64_t start_ms, int64_t end_ms, std::string_view name = "x") {
    run.spans.push_back({start_ms * kMs, end_ms * kMs, pid, pid, kind, run.strings.intern(name)});
  }
  void counter(const std::string& name, int64_t pid, int64_t ts_ms, double value) {
    auto [it, added] = tracks.try_emplace({name, pid}, static_cast<uint32_t>(run.counter_tracks.size()));
    if (added) run.counter_tracks.push_back({run.strings.intern(name), pid, run.strings.intern("")});
    run.counter_values.push_back({it->second, ts_ms * kMs, value});
  }
  // A step [start, start+len): data wait 2 ms, forward 3, backward 4, optimizer 1, rest other.
  void step(int64_t pid, int64_t start, int64_t len, int64_t samples) {
    span(pid, SpanKind::kDataWait, start, start + 2);
    span(pid, SpanKind::kForward, start + 2, start + 5);
    span(pid, SpanKind::kBackward, start + 5, start + 9);
    span(pid, SpanKind::kOptimizer, start + len - 1, start + len);
    span(pid, SpanKind::kStep, start, start + len, "step");
    counter("step_samples", pid, start + len, static_cast<double>(samples));
    counter("step_peak_rss", pid, start + len, static_cast<double>(1000 + start));
  }
};

TEST(Steps, WarmupRule) {
  EXPECT_EQ(stepscope::warmup_step_count(0), 0u);
  EXPECT_EQ(stepscope::warmup_step_count(1), 0u);
  EXPECT_EQ(stepscope::warmup_step_count(2), 1u);
  EXPECT_EQ(stepscope::warmup_step_count(35), 3u);
  EXPECT_EQ(stepscope::warmup_step_count(100000), 10u);
}

// The section's first line counts steps and warm-up steps in words that
// read right for one and for none.
TEST(StepsText, CountsStepsAndWarmupInWords) {
  auto headline = [](int steps) {
    StepBuilder b;
    for (int i = 0; i < steps; ++i) b.step(1, 20 * i, 20, 8);
    std::ostringstream out;
    stepscope::write_steps_text(b.run, stepscope::analyze_steps(b.run), {}, out);
    std::string text = out.str();
    size_t begin = text.find("Steps of");
    return text.substr(begin, text.find('\n', begin) - begin);
  };
  EXPECT_EQ(headline(1), "Steps of pid 1: 1 step, none left out as warm-up");
  EXPECT_EQ(headline(2), "Steps of pid 1: 2 steps, the first left out as warm-up");
  EXPECT_EQ(headline(35), "Steps of pid 1: 35 steps, the first 3 left out as warm-up");
}

TEST(Steps, NoStepsIsEmpty) {
  stepscope::Run run;
  EXPECT_TRUE(stepscope::analyze_steps(run).empty());
}

TEST(Steps, PhasesOtherRatesAndPercentiles) {
  StepBuilder b;
  b.step(1, 0, 100, 8);  // warm-up: slow
  int64_t t = 100;
  for (int i = 0; i < 9; ++i, t += 20) b.step(1, t, 20, 8);
  b.run.metadata["hooks.1.rss_peak"] = "per_step";
  auto steps = stepscope::analyze_steps(b.run);
  ASSERT_EQ(steps.processes.size(), 1u);
  const auto& p = steps.processes[0];
  ASSERT_EQ(p.steps.size(), 10u);
  EXPECT_EQ(p.warmup_steps, 1u);
  EXPECT_TRUE(p.steps[0].warmup);
  const auto& s = p.steps[1];
  EXPECT_EQ(s.phase_ns[static_cast<size_t>(StepPhase::kDataWait)], 2 * kMs);
  EXPECT_EQ(s.phase_ns[static_cast<size_t>(StepPhase::kBackward)], 4 * kMs);
  EXPECT_EQ(s.phase_ns[static_cast<size_t>(StepPhase::kOther)], 10 * kMs);
  EXPECT_EQ(s.samples, 8);
  EXPECT_EQ(s.tokens, -1);
  ASSERT_TRUE(p.samples_per_sec);
  EXPECT_NEAR(*p.samples_per_sec, 8 / 0.020, 1e-6);
  EXPECT_FALSE(p.tokens_per_sec);
  EXPECT_DOUBLE_EQ(p.step_time.p50_ms, 20);
  EXPECT_DOUBLE_EQ(p.step_time.p99_ms, 20);
  EXPECT_NEAR(p.phase_fractions[static_cast<size_t>(StepPhase::kDataWait)], 0.1, 1e-9);
  double sum = 0;
  for (double f : p.phase_fractions) sum += f;
  EXPECT_NEAR(sum, 1, 1e-9);
  EXPECT_EQ(p.peak_host_bytes, 1000 + t - 20);
  EXPECT_FALSE(p.peak_device_bytes);
  EXPECT_TRUE(p.host_peak_per_step);
  ASSERT_EQ(p.histogram.size(), 1u);  // all steady steps equal
  EXPECT_EQ(p.histogram[0].count, 9u);
}

// A closure optimizer (LBFGS, Lightning's automatic optimization) runs forward
// and backward inside optimizer.step(): they are forward and backward time, the
// optimizer's is the rest of its span, and the phases add up to the step.
TEST(Steps, AClosureOptimizersForwardAndBackwardAreNotOptimizerTime) {
  StepBuilder b;
  for (int64_t start : {0, 20}) {
    b.span(1, SpanKind::kDataWait, start, start + 2);
    b.span(1, SpanKind::kOptimizer, start + 4, start + 20);   // step(closure)
    b.span(1, SpanKind::kForward, start + 5, start + 8);      // the closure's
    b.span(1, SpanKind::kForward, start + 6, start + 7);      // a second root, nested
    b.span(1, SpanKind::kBackward, start + 8, start + 14);    // the closure's
    b.span(1, SpanKind::kStep, start, start + 20, "step");
  }
  auto steps = stepscope::analyze_steps(b.run);
  ASSERT_EQ(steps.processes.size(), 1u);
  const auto& phases = steps.processes[0].steps[1].phase_ns;
  auto ms = [&](StepPhase p) { return phases[static_cast<size_t>(p)] / kMs; };
  EXPECT_EQ(ms(StepPhase::kDataWait), 2);
  EXPECT_EQ(ms(StepPhase::kForward), 3);
  EXPECT_EQ(ms(StepPhase::kBackward), 6);
  EXPECT_EQ(ms(StepPhase::kOptimizer), 7);
  EXPECT_EQ(ms(StepPhase::kOther), 2);
}

TEST(Steps, PercentilesInterpolate) {
  StepBuilder b;
  int64_t t = 0;
  for (int len : {50, 10, 20, 30, 40, 50}) {  // the first is warm-up
    b.step(1, t, len, 1);
    t += len;
  }
  stepscope::StepsAnalysis steps = stepscope::analyze_steps(b.run);  // kept: p refers into it
  const auto& p = steps.processes.at(0);
  EXPECT_DOUBLE_EQ(p.step_time.p50_ms, 30);
  EXPECT_DOUBLE_EQ(p.step_time.p90_ms, 46);
  EXPECT_EQ(p.histogram.size(), 10u);
  uint64_t counted = 0;
  for (const auto& bin : p.histogram) counted += bin.count;
  EXPECT_EQ(counted, 5u);
}

TEST(Steps, RanksPrimaryAndSlowest) {
  StepBuilder b;
  for (int i = 0; i < 5; ++i) b.step(10, i * 20, 20, 4);
  for (int i = 0; i < 5; ++i) b.step(11, i * 30, 30, 4);
  b.run.metadata["hooks.10.rank"] = "1";
  b.run.metadata["hooks.11.rank"] = "0";
  auto steps = stepscope::analyze_steps(b.run);
  ASSERT_EQ(steps.processes.size(), 2u);
  EXPECT_EQ(steps.processes[steps.primary].rank, 0);
  stepscope::JobRanks job;
  stepscope::add_job_ranks(job, stepscope::job_ranks_of(b.run, steps, "run.db"));
  ASSERT_TRUE(job.slowest);
  EXPECT_EQ(job.ranks[*job.slowest].steps.pid, 11);
  // 30 ms against 20 stands out; the rule is the traces' (stragglers.hpp).
  ASSERT_EQ(job.slow.size(), 1u);
  EXPECT_EQ(job.ranks[job.slow[0]].steps.pid, 11);
  std::ostringstream text;
  stepscope::write_steps_text(b.run, steps, job, text);
  EXPECT_NE(text.str().find("      0                -    -       11      5     30.00     30.00        7%         -  "
                            "other  <- slow\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("      1                -    -       10      5     20.00     20.00       10%         -  "
                            "other\n"),
            std::string::npos)
      << text.str();
}

// A slowest process that is slower by a little is no straggler: ranks of
// one job differ by a percent or two from run to run.
TEST(Steps, NearlyEqualRanksHaveNoStraggler) {
  StepBuilder b;
  for (int i = 0; i < 5; ++i) b.step(10, i * 100, 100, 4);
  for (int i = 0; i < 5; ++i) b.step(11, i * 103, 103, 4);
  auto steps = stepscope::analyze_steps(b.run);
  ASSERT_EQ(steps.processes.size(), 2u);
  stepscope::JobRanks job;
  stepscope::add_job_ranks(job, stepscope::job_ranks_of(b.run, steps, "run.db"));
  ASSERT_TRUE(job.slowest);
  EXPECT_EQ(job.ranks[*job.slowest].steps.pid, 11);
  EXPECT_TRUE(job.slow.empty());
  std::ostringstream text;
  stepscope::write_steps_text(b.run, steps, job, text);
  EXPECT_NE(text.str().find("Ranks (2 processes with steps; no straggler)"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("<- "), std::string::npos) << text.str();
}

TEST(Steps, SamplesAttributedToPhasesAndDataWaitFunctions) {
  StepBuilder b;
  b.step(1, 0, 20, 4);
  b.step(1, 20, 20, 4);
  b.span(2, SpanKind::kOther, 0, 40, "worker_batch");
  auto frame = b.run.intern_frame("decode", "data.py", 3);
  auto other = b.run.intern_frame("train", "train.py", 9);
  auto decode_stack = b.run.stacks.intern({other, frame});
  auto train_stack = b.run.stacks.intern({other});
  auto sample = [&](int32_t pid, int64_t ts_ms, uint32_t stack) {
    b.run.samples.push_back({ts_ms * kMs, pid, pid, stack, stepscope::ThreadState::kRunning});
  };
  sample(1, 21, decode_stack);  // data wait of step 2
  sample(1, 23, train_stack);   // forward
  sample(1, 35, train_stack);   // other
  sample(1, 50, train_stack);   // after the last step
  sample(2, 5, decode_stack);   // a worker, in a batch
  sample(2, 45, decode_stack);  // a worker, outside
  // A worker's sleeping helper thread, in a batch: not what the batch costs.
  b.run.samples.push_back({6 * kMs, 2, 99, train_stack, stepscope::ThreadState::kIdle});
  auto steps = stepscope::analyze_steps(b.run);
  const auto& a = steps.attribution();
  EXPECT_EQ(a.by_phase[static_cast<size_t>(StepPhase::kDataWait)], 1u);
  EXPECT_EQ(a.by_phase[static_cast<size_t>(StepPhase::kForward)], 1u);
  EXPECT_EQ(a.by_phase[static_cast<size_t>(StepPhase::kOther)], 1u);
  EXPECT_EQ(a.outside_steps, 1u);
  ASSERT_EQ(a.data_wait_functions.size(), 1u);
  EXPECT_EQ(b.run.strings.get(a.data_wait_functions[0].function), "decode");
  EXPECT_EQ(a.worker_samples, 1u);
}

}  // namespace

// Each rank of a run is attributed as if it were the primary (what its own
// diagnosis reads), in the one pass that attributes the primary.
TEST(Steps, EachProcessIsAttributedAsIfItWereThePrimary) {
  StepBuilder b;
  b.step(1, 0, 20, 4);
  b.step(3, 0, 20, 4);
  b.run.metadata["hooks.1.rank"] = "0";
  b.run.metadata["hooks.3.rank"] = "1";
  b.span(2, SpanKind::kOther, 0, 40, "worker_batch");
  auto train_stack = b.run.stacks.intern({b.run.intern_frame("train", "train.py", 9)});
  auto sample = [&](int32_t pid, int64_t ts_ms) {
    b.run.samples.push_back({ts_ms * kMs, pid, pid, train_stack, stepscope::ThreadState::kRunning});
  };
  sample(1, 1);  // rank 0's data wait
  sample(3, 1);  // rank 1's data wait
  sample(3, 3);  // rank 1's forward
  sample(3, 30); // rank 1, after its steps
  sample(2, 5);  // a worker's batch: both ranks see the run's workers
  auto steps = stepscope::analyze_steps(b.run);
  ASSERT_EQ(steps.processes.size(), 2u);
  ASSERT_EQ(steps.attributions.size(), 2u);
  EXPECT_EQ(steps.processes[steps.primary].pid, 1);
  const auto& first = steps.attribution();
  EXPECT_EQ(first.by_phase[static_cast<size_t>(StepPhase::kDataWait)], 1u);
  EXPECT_EQ(first.by_phase[static_cast<size_t>(StepPhase::kForward)], 0u);
  EXPECT_EQ(first.worker_samples, 1u);
  auto second = stepscope::with_primary(steps, 1);
  const auto& a = second.attribution();
  EXPECT_EQ(a.by_phase[static_cast<size_t>(StepPhase::kDataWait)], 1u);
  EXPECT_EQ(a.by_phase[static_cast<size_t>(StepPhase::kForward)], 1u);
  EXPECT_EQ(a.outside_steps, 1u);
  EXPECT_EQ(a.worker_samples, 1u);
}
