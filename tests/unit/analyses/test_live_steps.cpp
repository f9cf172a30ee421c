// The live step figures (record --metrics) from the hooks' own datagrams, taken in
// as they arrive, against the steps analysis of the finished run.
#include "analyses/live_steps.hpp"

#include <gtest/gtest.h>

#include <string>

#include "analyses/steps/steps.hpp"
#include "collectors/hooks/events.hpp"

namespace stepscope {
namespace {

constexpr int64_t kMs = 1'000'000;

// Step i of pid 42 (tid 43): [1000+i*100, 1000+i*100+100) ms with a data wait of 10 ms, a
// forward of 30, a backward of 40, and an optimizer of 15 that holds a closure's
// forward of 5 (the optimizer claims only its own 10 ms); 8 samples, 128 tokens. The
// places as the hooks send them, the step ended by stepscope.step() with its memory peak.
std::string step_records(int i) {
  int64_t t = 1000 * kMs + i * 100 * kMs;  // the run's clock is never 0
  auto at = [&](int64_t ms) { return std::to_string(t + ms * kMs); };
  return "D 43 " + at(0) + " " + at(10) + " 8 128\n" + "F 43 " + at(10) + " " + at(40) + "\n" + "B 43 " + at(40) +
         " " + at(80) + "\n" + "F 43 " + at(82) + " " + at(87) + "\n" + "O 43 " + at(80) + " " + at(95) + " 1\n" +
         "S 43 " + at(100) + " " + at(100) + " 8 128\n" + "M 43 " + at(100) + " " + at(100) + " " +
         std::to_string(1000 + i) + " -1\n";
}

void add(Run& run, HookRunBuilder& builder, const std::string& records) {
  auto datagram = decode_hook_datagram("SS1 42\n" + records);
  ASSERT_TRUE(datagram);
  ASSERT_EQ(datagram->bad_records, 0u);
  builder.add(run, *datagram);
}

// Six steps, taken in two per update as commits would; `after_update` runs after each.
template <typename AfterUpdate>
void take_six_steps(Run& run, LiveSteps& live, AfterUpdate after_update) {
  HookRunBuilder builder;
  for (int i = 0; i < 6; ++i) {
    add(run, builder, step_records(i));
    if (i % 2 == 0) continue;
    live.update(run);
    after_update();
  }
}

TEST(LiveSteps, TakesInWhatArrivesAndMatchesTheStepsAnalysis) {
  stepscope::Run run;
  LiveSteps live;
  take_six_steps(run, live, [] {});
  live.update(run);  // nothing new: nothing counted twice
  ASSERT_EQ(live.processes().size(), 1u);
  const LiveProcessSteps& p = live.processes().at(42);
  EXPECT_EQ(p.steps, 6u);
  EXPECT_EQ(p.samples, 48);
  EXPECT_EQ(p.tokens, 768);
  EXPECT_EQ(p.last_host_peak_bytes, 1005);
  EXPECT_FALSE(p.last_device_peak_bytes);  // -1: not measured
  EXPECT_EQ(p.last_step_end_ns, 1600 * kMs);
  EXPECT_NEAR(p.step_seconds, 0.6, 1e-9);
  EXPECT_EQ(p.bucket_steps[5], 0u);  // 0.05 s
  EXPECT_EQ(p.bucket_steps[6], 6u);  // 0.1 s

  StepsAnalysis analysis = analyze_steps(run);
  ASSERT_EQ(analysis.processes.size(), 1u);
  std::array<int64_t, kStepPhaseCount> want{};
  for (const StepRecord& step : analysis.processes[0].steps) {
    for (size_t i = 0; i < kStepPhaseCount; ++i) want[i] += step.phase_ns[i];
  }
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    EXPECT_NEAR(p.phase_seconds[i], static_cast<double>(want[i]) * 1e-9, 1e-9) << step_phase_name(StepPhase(i));
  }
  EXPECT_NEAR(p.phase_seconds[static_cast<size_t>(StepPhase::kOptimizer)], 6 * 0.010, 1e-9);
  EXPECT_NEAR(p.phase_seconds[static_cast<size_t>(StepPhase::kOther)], 6 * 0.005, 1e-9);
}

// A recorder drops the counter values its file holds after each update
// (RunWriter::release_written): the steps' counters are still all counted.
TEST(LiveSteps, CounterValuesDroppedAfterAnUpdateAreNotMissed) {
  stepscope::Run run;
  LiveSteps live;
  take_six_steps(run, live, [&] {
    run.counter_values_dropped += run.counter_values.size();
    run.counter_values.clear();
  });
  const LiveProcessSteps& p = live.processes().at(42);
  EXPECT_EQ(p.steps, 6u);
  EXPECT_EQ(p.samples, 48);
  EXPECT_EQ(p.tokens, 768);
  EXPECT_EQ(p.last_host_peak_bytes, 1005);
}

// Steps without measured batches (an explicit step() with no samples) have none:
// an unknown count is not a zero.
TEST(LiveSteps, UnknownSamplesStayUnknown) {
  stepscope::Run run;
  HookRunBuilder builder;
  add(run, builder, "A 43 1000 1000\nS 43 1100 1100 -1 -1\n");
  LiveSteps live;
  live.update(run);
  EXPECT_FALSE(live.processes().at(42).samples);
  EXPECT_FALSE(live.processes().at(42).tokens);
}

// Phase spans no step claimed (10,000 data waits on a thread that ends no step) are
// dropped oldest first past a bound; the step that comes still claims its own.
TEST(LiveSteps, DroppingUnclaimedPhaseSpansKeepsAStepsOwn) {
  stepscope::Run run;
  HookRunBuilder builder;
  std::string records;
  for (int i = 0; i < 10000; ++i) {
    records += "D 44 " + std::to_string(1000 + 2 * i) + " " + std::to_string(1001 + 2 * i) + " 1 -1\n";
  }
  add(run, builder, records + "D 43 100000 100010 1 -1\nS 43 100020 100020 1 -1\n");
  LiveSteps live;
  live.update(run);
  EXPECT_NEAR(live.processes().at(42).phase_seconds[static_cast<size_t>(StepPhase::kDataWait)], 10e-9, 1e-12);
}

}  // namespace
}  // namespace stepscope
