// A process's steps, made in the recorder from the places its hooks saw.
//
// The hooks in the program only note each place of a step (a batch fetched,
// an outermost forward, backward, optimizer step) with its times: inside a
// training step, where the caches hold the model, Python bookkeeping at the
// places cost about 45 us a step on the AMD EPYC VM, a third of the hooks'
// time (bench/README.md, "The step assembly moved into the recorder"). Here, in order, the places become what docs/steps.md
// defines:
//
// * A step runs from the end of the previous one (or, for the first, from the
//   first activity seen: a data wait, a forward, a range) to the next
//   optimizer step or stepscope.step() call. Its samples and tokens are those
//   of the batches fetched during it, unless stepscope.step() says otherwise.
// * Several optimizers that step in turn (a GAN's discriminator and
//   generator) make one step: the optimizer steps between two batches are a
//   round, and a step ends at the last optimizer step of a round. How many
//   optimizers a round has is learned from the rounds before; until then (the
//   first round, or a round with fewer optimizer steps) the step ends when the
//   round does: at the next batch, at an optimizer that steps again, or at the
//   end, with the time of the round's last optimizer step.
// * Evaluation inside training is not the step's forward or data wait: the
//   batches and forwards since the last backward or optimizer step are held (a
//   segment) until a backward or an optimizer step says they trained. A
//   segment that ran a forward and is closed by the next batch (or by the end)
//   instead trained nothing: it becomes one evaluation span. A segment of
//   batches alone stays open (a loader that fetches a batch ahead), up to
//   kMaxHeldBatches. With explicit steps (stepscope.step()) nothing is held.
// * The memory peaks the process read (the peaks since its last read) belong
//   to the step that ends where they were read, or else to the next step that
//   ends; peaks read at exit, to the last step if it went without.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// The longest span a record may claim, or the steps and evaluation made of
// several records: a week. A hostile or broken sender cannot make a span of
// centuries.
inline constexpr int64_t kMaxHookSpanNs = 7LL * 24 * 3600 * 1'000'000'000;

struct HookSpanEvent {
  SpanKind kind = SpanKind::kOther;
  int64_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string name;  // user ranges; fixed names otherwise
};

// A place of a step in the program, as the hooks saw it (docs/steps.md, "Wire
// format"): a batch fetched (`D`), an outermost forward (`F`), backward (`B`)
// or optimizer step (`O`), a step GradScaler skipped (`K`), a range begun
// (`A`), a stepscope.step() call (`S`), the memory peaks read (`M`).
struct HookPlace {
  char type = 0;
  int64_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t a = 0;  // D, S: samples; O, K: the optimizer; M: the host peak
  int64_t b = 0;  // D, S: tokens; M: the device peak
};

// A step, with what it processed (-1: unknown).
struct HookStep {
  int64_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t samples = -1;
  int64_t tokens = -1;
};

// Memory peaks (-1: unknown) of the step that ended at `end_ns`.
struct HookPeaks {
  int64_t end_ns = 0;
  int64_t host_bytes = -1;
  int64_t device_bytes = -1;
};

struct AssembledSteps {
  std::vector<HookSpanEvent> spans;  // data waits, phases, evaluation
  std::vector<std::pair<int64_t, int64_t>> batches;  // (samples, tokens) per data-wait span, in order
  std::vector<HookStep> steps;
  std::vector<HookPeaks> peaks;
};

class StepAssembler {
 public:
  // Batches a segment holds before it no longer waits for a forward (a loop
  // that only reads its DataLoader): they become data waits then.
  static constexpr size_t kMaxHeldBatches = 8;
  // Bounds on what the places of a broken or hostile sender can make the
  // recorder hold: forwards with no backward (inference) become evaluation,
  // and a round of more optimizers closes.
  static constexpr size_t kMaxHeldForwards = 1024;
  static constexpr size_t kMaxRoundOptimizers = 64;

  void take(const HookPlace& place, AssembledSteps& out);
  // The end: a round never closed, a segment still held, peaks read at exit.
  void finish(AssembledSteps& out);

 private:
  void fetched(const HookPlace& batch, AssembledSteps& out);
  void forward(const HookPlace& call, AssembledSteps& out);
  void trained(AssembledSteps& out);
  void send_evaluation(AssembledSteps& out);
  void optimizer_stepped(int64_t optimizer, int64_t tid, int64_t ts, AssembledSteps& out);
  void close_round(AssembledSteps& out);
  void end(int64_t tid, int64_t ts, int64_t samples, int64_t tokens, AssembledSteps& out);
  void peaks_read(const HookPlace& read, AssembledSteps& out);
  void note_start(int64_t ts);

  bool explicit_steps_ = false;  // once stepscope.step() is called, optimizer steps no longer end steps
  std::optional<int64_t> start_;
  int64_t samples_ = -1;
  int64_t tokens_ = -1;
  std::vector<HookPlace> held_batches_;   // the segment
  std::vector<HookPlace> held_forwards_;
  std::vector<int64_t> round_;            // the optimizers that stepped since the last batch
  size_t round_size_ = 0;                 // optimizers in a round, from the last one (0: not known yet)
  std::optional<std::pair<int64_t, int64_t>> round_end_;  // (tid, ts) of the round's last optimizer step
  std::optional<HookPeaks> last_step_;    // the last step's end, and the peaks it has
  std::optional<HookPeaks> held_peaks_;   // read inside a step not yet ended
};

}  // namespace stepscope
