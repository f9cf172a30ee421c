// step_overhead: the step's "other" phase, the time outside data wait, forward,
// backward and the optimizer, is where a training loop's own extra work goes:
// checkpoint saving, evaluation, metric computation, printing, a custom
// gradient clipper. The step thread's samples there name the functions.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"
#include "analyses/spans/intervals.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

// What a kind of extra work is, how to find it in a stack (or in time: the
// spans the hooks marked it with), and what removes it.
struct OverheadKind {
  const char* what;
  bool (*matches)(const Run& run, const Frame& frame);
  Intervals DiagnosisFacts::*marked;  // or null
  const char* remedy;
};

bool saves_checkpoints(const Run& run, const Frame& frame) {
  static const std::vector<std::string_view> files = {"torch/serialization.py", "/safetensors/",
                                                      "torch/distributed/checkpoint/"};
  return frame_file_contains(run, frame, files);
}

bool evaluates(const Run& run, const Frame& frame) {
  const std::string& name = run.strings.get(frame.function);
  return name.find("eval") != std::string::npos || name.find("valid") != std::string::npos;
}

constexpr std::array<OverheadKind, 2> kKinds = {{
    {"save checkpoints", saves_checkpoints, nullptr,
     "Save checkpoints less often, or asynchronously (torch.distributed.checkpoint.async_save, or torch.save "
     "of a CPU copy from a background thread)."},
    {"evaluate", evaluates, &DiagnosisFacts::main_evaluations,
     "Move evaluation out of the step: run it every N steps, on fewer batches, or in a process of its own."},
}};

constexpr FrameId kNoCaller = UINT32_MAX;

// The nearest frame above the leaf in another file: for a library's function,
// the line of the program that called into the library; for a native leaf
// (record --native), the Python line that called into native code. When the
// whole stack is in the leaf's file, its direct caller.
FrameId caller_elsewhere(const Run& run, StackId stack) {
  const StackNode& leaf = run.stacks.node(stack);
  const Frame& leaf_frame = run.frames.get(leaf.frame);
  const bool native = leaf_frame.kind == FrameKind::kNative;
  for (StackId up = leaf.parent; up != StackTree::kRoot; up = run.stacks.node(up).parent) {
    FrameId frame = run.stacks.node(up).frame;
    const Frame& caller = run.frames.get(frame);
    if (native ? caller.kind == FrameKind::kPython : caller.file != leaf_frame.file) return frame;
  }
  return leaf.parent == StackTree::kRoot ? kNoCaller : run.stacks.node(leaf.parent).frame;
}

// "_save (torch/serialization.py:1313) called from save_checkpoint
// (train.py:88) (40%)": the leaf frames that take most of `samples`, each with
// its caller in another file.
std::string functions_text(const Run& run, const std::map<StackId, uint64_t>& stacks, uint64_t total) {
  std::map<std::pair<FrameId, FrameId>, uint64_t> by_site;  // (leaf, caller) -> samples
  for (auto [stack, count] : stacks) by_site[{run.stacks.node(stack).frame, caller_elsewhere(run, stack)}] += count;
  std::vector<std::pair<std::pair<FrameId, FrameId>, uint64_t>> sorted(by_site.begin(), by_site.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    auto [leaf, caller] = sorted[i].first;
    text += fmt::format("{}{}{}{} ({})", i ? "; " : "", frame_label(run.strings, run.frames.get(leaf)),
                        caller == kNoCaller ? "" : " called from ",
                        caller == kNoCaller ? "" : frame_label(run.strings, run.frames.get(caller)),
                        percent_text(static_cast<double>(sorted[i].second) / static_cast<double>(total)));
  }
  return text;
}

}  // namespace

std::optional<Finding> step_overhead_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary || f.step_samples.size() < kMinRuleSamples) return std::nullopt;
  // Without a forward, backward or optimizer phase (a loop without torch, with
  // explicit steps) nothing was measured that "other" is the rest of.
  auto fraction = [&](StepPhase p) { return f.primary->phase_fractions[static_cast<size_t>(p)]; };
  if (fraction(StepPhase::kForward) + fraction(StepPhase::kBackward) + fraction(StepPhase::kOptimizer) <= 0) {
    return std::nullopt;
  }
  const Run& run = in.run;
  StackFrameFinder claimed(run, [&](const Frame& frame) { return claimed_by_host_rules(run, frame); });
  uint64_t other = 0;
  std::vector<const Sample*> unexplained;
  for (const Sample* s : f.step_samples) {
    if (covers(f.main_phases, s->ts_ns)) continue;
    ++other;
    bool named = covers(f.main_gc_pauses, s->ts_ns) || claimed.find(s->stack) != StackFrameFinder::kNone;
    if (!named) unexplained.push_back(s);
  }
  uint64_t count = unexplained.size();
  double other_share = fraction(StepPhase::kOther);
  // The phase's measured time, less the part of its samples the named rules explain.
  double share = other == 0 ? 0 : other_share * static_cast<double>(count) / static_cast<double>(other);
  if (count < kMinRuleSamples || share < kStepOverheadShare) return std::nullopt;

  Finding out = time_finding("step_overhead", share,
                             fmt::format("Step overhead: {} of step time is outside data wait, forward, backward "
                                         "and the optimizer",
                                         percent_text(share)));
  out.evidence.push_back(fmt::format("\"other\" takes {} of step time ({:.1f} ms of a mean {:.1f} ms step); {} of "
                                     "the step thread's {} samples fall there{}",
                                     percent_text(other_share), other_share * f.primary->step_time.mean_ms,
                                     f.primary->step_time.mean_ms, other, f.step_samples.size(),
                                     count < other ? fmt::format(", {} of them in code that logging_overhead or "
                                                                 "gc_pauses name", other - count)
                                                   : ""));
  std::map<StackId, uint64_t> by_stack;
  for (const Sample* s : unexplained) ++by_stack[s->stack];
  out.evidence.push_back("where: " + functions_text(run, by_stack, count));
  std::vector<std::pair<uint64_t, const OverheadKind*>> kinds;
  for (const OverheadKind& kind : kKinds) {
    StackFrameFinder finder(run, [&](const Frame& frame) { return kind.matches(run, frame); });
    const Intervals* marked = kind.marked ? &(f.*kind.marked) : nullptr;
    uint64_t hits = 0;
    for (const Sample* s : unexplained) {
      hits += finder.find(s->stack) != StackFrameFinder::kNone || (marked && covers(*marked, s->ts_ns));
    }
    if (hits > 0) kinds.emplace_back(hits, &kind);
  }
  std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto [hits, kind] : kinds) {
    out.evidence.push_back(fmt::format("{} of these samples {}",
                                       percent_text(static_cast<double>(hits) / static_cast<double>(count)), kind->what));
    out.recommendation += std::string(kind->remedy) + " ";
  }
  out.recommendation +=
      "Start with the functions above. Log every N steps and keep scalars on the device (call .item() only when "
      "logging); take work that need not run every step out of the loop.";
  return out;
}

}  // namespace stepscope
