// The steps the recorder makes from a process's places (collectors/hooks/step_assembly.hpp,
// docs/steps.md): each rule of the hooks' step anatomy on a short sequence of places.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/hooks/step_assembly.hpp"

namespace {

using stepscope::AssembledSteps;
using stepscope::HookPlace;
using stepscope::SpanKind;
using stepscope::StepAssembler;

constexpr int64_t kTid = 7;

HookPlace place(char type, int64_t start, int64_t end, int64_t a = 0, int64_t b = 0) {
  return {type, kTid, start, end, a, b};
}

// The places in order, then the end of the recording.
AssembledSteps assemble(const std::vector<HookPlace>& places, bool finish = true) {
  StepAssembler assembler;
  AssembledSteps out;
  for (const HookPlace& p : places) assembler.take(p, out);
  if (finish) assembler.finish(out);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> step_bounds(const AssembledSteps& out) {
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (const auto& step : out.steps) bounds.emplace_back(step.start_ns, step.end_ns);
  return bounds;
}

// "kind:start-end" for each span, in order.
std::string spans(const AssembledSteps& out) {
  std::string text;
  for (const auto& span : out.spans) {
    text += (text.empty() ? "" : " ") + span.name + ":" + std::to_string(span.start_ns) + "-" +
            std::to_string(span.end_ns);
  }
  return text;
}

// A training loop's steps: batch, forward, backward, optimizer.
std::vector<HookPlace> training_step(int64_t t, int64_t optimizer = 1, int64_t samples = 8) {
  return {place('D', t, t + 10, samples, -1), place('F', t + 10, t + 20), place('B', t + 20, t + 30),
          place('O', t + 30, t + 40, optimizer)};
}

std::vector<HookPlace> joined(std::initializer_list<std::vector<HookPlace>> parts) {
  std::vector<HookPlace> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

TEST(StepAssembly, OneOptimizerEndsAStepOnceItsRoundIsKnown) {
  AssembledSteps out = assemble(joined({training_step(100), training_step(140), training_step(180)}), false);
  // The first round closes at the second batch; from then on each optimizer step ends one.
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{100, 140}, {140, 180}, {180, 220}}));
  EXPECT_EQ(out.steps[0].samples, 8);
  EXPECT_EQ(out.steps[0].tokens, -1);
  EXPECT_EQ(spans(out).rfind("data_wait:100-110 forward:110-120 backward:120-130 optimizer:130-140 data_wait:", 0),
            0u)
      << spans(out);
  EXPECT_EQ(out.batches.size(), 3u);
}

TEST(StepAssembly, TheFirstRoundEndsAtTheEndOfTheRecordingToo) {
  AssembledSteps out = assemble(training_step(100));
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{100, 140}}));
}

TEST(StepAssembly, TwoOptimizersInTurnMakeOneStep) {
  auto gan = [](int64_t t) {
    return std::vector<HookPlace>{place('D', t, t + 10, 4), place('F', t + 10, t + 20), place('B', t + 20, t + 30),
                                  place('O', t + 30, t + 40, 1), place('F', t + 40, t + 50),
                                  place('B', t + 50, t + 60), place('O', t + 60, t + 70, 2)};
  };
  AssembledSteps out = assemble(joined({gan(100), gan(170), gan(240)}));
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{100, 170}, {170, 240}, {240, 310}}));
  EXPECT_EQ(out.steps[1].samples, 4);
}

TEST(StepAssembly, AnOptimizerSteppingAgainClosesTheRound) {
  // Gradient accumulation's micro-batches without a batch between optimizer steps: each
  // step of the same optimizer is a step.
  AssembledSteps out = assemble({place('F', 100, 110), place('B', 110, 120), place('O', 120, 130, 1),
                                 place('F', 130, 140), place('B', 140, 150), place('O', 150, 160, 1)});
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{100, 130}, {130, 160}}));
}

TEST(StepAssembly, BatchesAndForwardsThatTrainNothingAreEvaluation) {
  AssembledSteps out = assemble(joined({training_step(100), training_step(140),
                                        {place('D', 180, 190, 32), place('F', 190, 200), place('D', 200, 205, 32),
                                         place('F', 205, 215)},
                                        training_step(215)}));
  // Two evaluation segments: each closed by the next batch, one span each.
  EXPECT_NE(spans(out).find("evaluation:180-200 evaluation:200-215 data_wait:215-225"), std::string::npos)
      << spans(out);
  ASSERT_EQ(out.steps.size(), 3u);
  EXPECT_EQ(out.steps[2].start_ns, 180);  // the evaluation is inside the step, not its samples
  EXPECT_EQ(out.steps[2].samples, 8);
}

TEST(StepAssembly, ABatchFetchedAheadIsTheNextStepsAndBatchesAloneAreHeldOnlySoLong) {
  AssembledSteps ahead = assemble({place('D', 100, 110, 8), place('D', 110, 120, 8), place('F', 120, 130),
                                   place('B', 130, 140), place('O', 140, 150, 1)});
  ASSERT_EQ(ahead.steps.size(), 1u);
  EXPECT_EQ(ahead.steps[0].samples, 16);
  std::vector<HookPlace> reading;
  for (int i = 0; i < 20; ++i) reading.push_back(place('D', 100 + 10 * i, 110 + 10 * i, 1));
  // Sent nine at a time, once more than kMaxHeldBatches are held; the rest at the end.
  static_assert(StepAssembler::kMaxHeldBatches == 8);
  EXPECT_EQ(assemble(reading, false).batches.size(), 18u);
  AssembledSteps loader_only = assemble(reading);
  EXPECT_EQ(loader_only.batches.size(), 20u);
  EXPECT_TRUE(loader_only.steps.empty());
}

TEST(StepAssembly, AClosureOptimizerNestsItsForwardAndBackward) {
  // LBFGS or Lightning: forward and backward run inside optimizer.step(closure), so their
  // places come before the optimizer's, which spans them.
  AssembledSteps out = assemble({place('D', 100, 110, 8), place('F', 120, 130), place('B', 130, 140),
                                 place('O', 115, 150, 1), place('D', 150, 160, 8), place('F', 170, 180),
                                 place('B', 180, 190), place('O', 165, 200, 1)});
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{100, 150}, {150, 200}}));
  EXPECT_EQ(spans(out).rfind("data_wait:100-110 forward:120-130 backward:130-140 optimizer:115-150 ", 0), 0u)
      << spans(out);
}

TEST(StepAssembly, AStepGradScalerSkippedIsStillAStep) {
  AssembledSteps out = assemble(joined({training_step(100), training_step(140),
                                        {place('D', 180, 190, 8), place('F', 190, 200), place('B', 200, 210),
                                         place('K', 215, 215, 1)},
                                        training_step(220)}));
  EXPECT_EQ(step_bounds(out),
            (std::vector<std::pair<int64_t, int64_t>>{{100, 140}, {140, 180}, {180, 215}, {215, 260}}));
}

TEST(StepAssembly, ExplicitStepsAloneEndStepsAndSayTheirSamples) {
  AssembledSteps out = assemble({place('A', 90, 90), place('D', 100, 110, 8), place('O', 120, 130, 1),
                                 place('S', 140, 140, 64, 4096), place('D', 150, 160, 8), place('O', 160, 170, 1),
                                 place('S', 180, 180, -1, -1), place('F', 190, 200)});
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{90, 140}, {140, 180}}));
  EXPECT_EQ(out.steps[0].samples, 64);
  EXPECT_EQ(out.steps[0].tokens, 4096);
  EXPECT_EQ(out.steps[1].samples, 8);  // not given: the batches'
  // Nothing is held: the last forward is sent as one, not as evaluation.
  EXPECT_NE(spans(out).find("forward:190-200"), std::string::npos) << spans(out);
}

TEST(StepAssembly, PeaksGoToTheStepThatEndsWhereTheyWereRead) {
  AssembledSteps out = assemble(joined({training_step(100), {place('M', 140, 140, 5000, -1)}, training_step(140),
                                        training_step(180), {place('M', 220, 220, 6000, 7000)}, training_step(220),
                                        {place('M', 300, 300, 9000, -1)}}));
  ASSERT_EQ(out.peaks.size(), 3u);
  // The first was read inside the first round, before its step ended (at the next batch).
  EXPECT_EQ(out.peaks[0].end_ns, 140);
  EXPECT_EQ(out.peaks[0].host_bytes, 5000);
  EXPECT_EQ(out.peaks[1].end_ns, 220);
  EXPECT_EQ(out.peaks[1].device_bytes, 7000);
  // Read at exit: the last step's, which went without.
  EXPECT_EQ(out.peaks[2].end_ns, 260);
  EXPECT_EQ(out.peaks[2].host_bytes, 9000);
}

TEST(StepAssembly, PeaksReadInAStepNotYetEndedWaitForItsEnd) {
  // The first round of two optimizers: read at the first one's step, the peaks wait for
  // the round's step to end (at the next batch, with the second one's time); two reads
  // in one step keep the larger of each.
  AssembledSteps out = assemble({place('D', 100, 110, 8), place('O', 130, 140, 1), place('M', 140, 140, 5000, -1),
                                 place('O', 160, 170, 2), place('M', 170, 170, 4000, 300),
                                 place('D', 170, 180, 8)},
                                false);
  EXPECT_EQ(step_bounds(out), (std::vector<std::pair<int64_t, int64_t>>{{100, 170}}));
  ASSERT_EQ(out.peaks.size(), 1u);
  EXPECT_EQ(out.peaks[0].end_ns, 170);
  EXPECT_EQ(out.peaks[0].host_bytes, 5000);
  EXPECT_EQ(out.peaks[0].device_bytes, 300);
}

TEST(StepAssembly, CountsFromTheProgramDoNotOverflow) {
  constexpr int64_t kLarge = std::numeric_limits<int64_t>::max() - 10;
  AssembledSteps out = assemble({place('D', 100, 110, kLarge, 5), place('D', 110, 120, kLarge, -1),
                                 place('F', 120, 130), place('B', 130, 140), place('O', 140, 150, 1)});
  ASSERT_EQ(out.steps.size(), 1u);
  EXPECT_EQ(out.steps[0].samples, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(out.steps[0].tokens, 5);
}

TEST(StepAssembly, StepsAndEvaluationOfASenderThatJumpsInTimeLastAWeekAtMost) {
  constexpr int64_t kLate = 1'000'000'000'000'000'000;
  AssembledSteps out = assemble({place('A', 1, 1), place('S', kLate, kLate), place('D', kLate, kLate + 1, 1),
                                 place('F', 2 * kLate, 2 * kLate + 1)});
  ASSERT_EQ(out.steps.size(), 1u);
  EXPECT_EQ(out.steps[0].end_ns - out.steps[0].start_ns, stepscope::kMaxHookSpanNs);
  AssembledSteps evaluation = assemble({place('D', 1, 2, 1), place('F', kLate, kLate + 1)});
  ASSERT_EQ(evaluation.spans.size(), 1u);
  EXPECT_EQ(evaluation.spans[0].end_ns - evaluation.spans[0].start_ns, stepscope::kMaxHookSpanNs);
}

TEST(StepAssembly, ForwardsWithNoBackwardAreBoundedAsEvaluation) {
  std::vector<HookPlace> inference;
  for (size_t i = 0; i < 2 * StepAssembler::kMaxHeldForwards + 10; ++i) {
    inference.push_back(place('F', 100 + 10 * static_cast<int64_t>(i), 105 + 10 * static_cast<int64_t>(i)));
  }
  AssembledSteps held = assemble(inference, false);
  EXPECT_EQ(held.spans.size(), 2u);
  EXPECT_EQ(held.spans[0].name, "evaluation");
  AssembledSteps ended = assemble(inference);
  EXPECT_EQ(ended.spans.size(), 3u);
  EXPECT_TRUE(ended.steps.empty());
}

}  // namespace
