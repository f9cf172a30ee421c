// Host work in the step thread that a change of code removes: logging and
// metric formatting, a slow optimizer implementation, garbage collection.
// They read the sampled stacks of the main process's step thread.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"
#include "analyses/steps/trace_steps.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

// Files of the logging module, metric loggers and progress bars, and the
// tensor formatter (printing a tensor formats it in Python).
const std::vector<std::string_view>& logging_files() {
  static const std::vector<std::string_view> files = {
      "/logging/",   "torch/_tensor_str.py", "/tqdm/",     "/wandb/",      "torch/utils/tensorboard/",
      "/tensorboardX/", "/mlflow/",         "/neptune/",  "/comet_ml/",   "/clearml/",
      "/rich/",      "/aim/sdk/",            "/swanlab/"};
  return files;
}

// The frame that called into the logging code: the last frame, root first,
// before the first logging frame. Empty when the stack starts there.
std::optional<FrameId> logging_call_site(const Run& run, StackId stack) {
  std::vector<FrameId> frames = run.stacks.frames(stack);
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frame_file_contains(run, run.frames.get(frames[i]), logging_files())) {
      return i == 0 ? std::nullopt : std::optional<FrameId>(frames[i - 1]);
    }
  }
  return std::nullopt;
}

std::string call_sites_text(const Run& run, const std::map<FrameId, uint64_t>& sites, uint64_t total) {
  std::vector<std::pair<FrameId, uint64_t>> sorted(sites.begin(), sites.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text = "called from ";
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("{} ({} of these samples)", frame_label(run.strings, run.frames.get(sorted[i].first)),
                        percent_text(static_cast<double>(sorted[i].second) / static_cast<double>(total)));
  }
  return text;
}

enum class OptimizerImpl { kUnknown, kForLoop, kForeach, kFused };

OptimizerImpl optimizer_impl(std::string_view function) {
  if (function.find("_single_tensor_") != std::string_view::npos) return OptimizerImpl::kForLoop;
  if (function.find("_multi_tensor_") != std::string_view::npos) return OptimizerImpl::kForeach;
  if (function.find("_fused_") != std::string_view::npos) return OptimizerImpl::kFused;
  return OptimizerImpl::kUnknown;
}

// The implementation the samples show most often: torch.optim names its
// functions _single_tensor_adamw, _multi_tensor_adamw, _fused_adamw, ...
std::pair<OptimizerImpl, std::string> seen_optimizer_impl(const Run& run, const DiagnosisFacts& f) {
  StackFrameFinder finder(run, [&](const Frame& frame) {
    return optimizer_impl(run.strings.get(frame.function)) != OptimizerImpl::kUnknown &&
           run.strings.get(frame.file).find("torch/optim/") != std::string::npos;
  });
  std::map<StringId, uint64_t> counts;
  for (const Sample* s : f.step_samples) {
    if (FrameId frame = finder.find(s->stack); frame != StackFrameFinder::kNone) ++counts[run.frames.get(frame).function];
  }
  if (counts.empty()) return {OptimizerImpl::kUnknown, ""};
  auto best = std::max_element(counts.begin(), counts.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string& name = run.strings.get(best->first);
  return {optimizer_impl(name), name};
}

// From a trace: the operators inside its Optimizer ranges on the step
// thread during steady steps. torch names the implementations' kernels
// aten::_fused_adamw_, aten::_foreach_add_, ...; with neither, the optimizer
// runs one small operation per parameter tensor.
std::pair<OptimizerImpl, std::string> traced_optimizer_impl(const Run& run, const DiagnosisFacts& f) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const Span& s : run.spans) {
    if (s.pid != f.primary->pid || s.tid != f.main_tid) continue;
    if (s.start_ns < f.window_start_ns || s.end_ns > f.window_end_ns) continue;
    if ((s.kind == SpanKind::kUserRange || s.kind == SpanKind::kCpuOp) && is_optimizer_range(run.strings.get(s.name))) {
      ranges.emplace_back(s.start_ns, s.end_ns);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  std::map<std::string, size_t> ops;
  size_t total = 0;
  for (const Span& s : run.spans) {
    if (s.kind != SpanKind::kCpuOp || s.pid != f.primary->pid || s.tid != f.main_tid) continue;
    auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(s.start_ns, INT64_MAX));
    if (it == ranges.begin() || std::prev(it)->second <= s.start_ns) continue;
    const std::string& name = run.strings.get(s.name);
    if (is_optimizer_range(name)) continue;
    ++ops[name];
    ++total;
  }
  if (total == 0) return {OptimizerImpl::kUnknown, ""};
  for (auto [needle, impl] :
       {std::make_pair("_fused_", OptimizerImpl::kFused), std::make_pair("_foreach_", OptimizerImpl::kForeach)}) {
    for (const auto& [name, count] : ops) {
      if (name.find(needle) == std::string::npos) continue;
      const char* kind = impl == OptimizerImpl::kFused ? "fused" : "foreach";
      return {impl, fmt::format("the trace's optimizer ranges run {} operators ({}): the {} implementation", kind,
                                name, kind)};
    }
  }
  auto most = std::max_element(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  size_t steps = std::max<size_t>(1, f.primary->steps.size() - f.primary->warmup_steps);
  return {OptimizerImpl::kForLoop,
          fmt::format("the trace's optimizer ranges run {} operators per step, none foreach or fused ({} most, {} "
                      "times): one small operation per parameter tensor",
                      total / steps, most->first, most->second / steps)};
}

// Which implementation the samples show, else (on a trace) the operators.
std::pair<OptimizerImpl, std::string> optimizer_impl_evidence(const Run& run, const DiagnosisFacts& f, bool trace) {
  auto [impl, function] = seen_optimizer_impl(run, f);
  switch (impl) {
    case OptimizerImpl::kForLoop:
      return {impl, fmt::format("the samples show the for-loop implementation ({}): one small operation per "
                                "parameter tensor",
                                function)};
    case OptimizerImpl::kForeach:
      return {impl, fmt::format("the samples show the foreach implementation ({})", function)};
    case OptimizerImpl::kFused:
      return {impl, fmt::format("the samples show the fused implementation ({})", function)};
    case OptimizerImpl::kUnknown:
      break;
  }
  if (trace) return traced_optimizer_impl(run, f);
  return {OptimizerImpl::kUnknown, ""};
}

bool is_gc_marker(const Frame& frame, const StringTable& strings) {
  return frame.kind == FrameKind::kMarker && strings.get(frame.function) == "<GC>";
}

uint64_t gc_marker_samples(const Run& run, const DiagnosisFacts& f) {
  StackFrameFinder finder(run, [&](const Frame& frame) { return is_gc_marker(frame, run.strings); });
  uint64_t hits = 0;
  for (const Sample* s : f.step_samples) hits += finder.find(s->stack) != StackFrameFinder::kNone;
  return hits;
}

}  // namespace

bool claimed_by_host_rules(const Run& run, const Frame& frame) {
  return is_gc_marker(frame, run.strings) || frame_file_contains(run, frame, logging_files());
}

std::optional<Finding> logging_overhead_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary || f.step_samples.size() < kMinRuleSamples) return std::nullopt;
  StackFrameFinder finder(in.run, [&](const Frame& frame) { return frame_file_contains(in.run, frame, logging_files()); });
  uint64_t hits = 0;
  std::map<StackId, uint64_t> logging_stacks;
  for (const Sample* s : f.step_samples) {
    if (finder.find(s->stack) == StackFrameFinder::kNone) continue;
    ++hits;
    ++logging_stacks[s->stack];
  }
  std::map<FrameId, uint64_t> sites;
  for (auto [stack, count] : logging_stacks) {
    if (auto site = logging_call_site(in.run, stack)) sites[*site] += count;
  }
  double share = f.sample_share(hits);
  if (hits < kMinRuleSamples || share < kLoggingShare) return std::nullopt;
  Finding out = time_finding("logging_overhead", share,
                             fmt::format("Logging overhead: {} of step time formats and writes logs", percent_text(share)));
  out.evidence.push_back(fmt::format("{} of {} samples of the step thread are in logging, metric-logging or "
                                     "tensor-formatting code",
                                     hits, f.step_samples.size()));
  if (!sites.empty()) out.evidence.push_back(call_sites_text(in.run, sites, hits));
  out.recommendation =
      "Log every N steps instead of every step; keep metrics as tensors and call .item() or format them "
      "only when logging (printing a tensor formats it in Python and, on a GPU, synchronizes); hand "
      "records to a background thread (logging.handlers.QueueHandler).";
  return out;
}

std::optional<Finding> optimizer_heavy_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary) return std::nullopt;
  double share = f.primary->phase_fractions[static_cast<size_t>(StepPhase::kOptimizer)];
  if (share < kOptimizerShare) return std::nullopt;
  Finding out = time_finding(
      "optimizer_heavy", share,
      fmt::format("Optimizer-heavy: the optimizer step takes {} of step time", percent_text(share)));
  // A trace's optimizer phase is its Optimizer.step and zero_grad ranges (docs/steps.md).
  bool trace = in.steps.origin == StepsOrigin::kProfilerSteps;
  out.evidence.push_back(fmt::format("{} take{} {:.1f} ms of a mean {:.1f} ms step",
                                     trace ? "the trace's Optimizer.step and Optimizer.zero_grad ranges" : "optimizer.step()",
                                     trace ? "" : "s", share * f.primary->step_time.mean_ms, f.primary->step_time.mean_ms));
  auto [impl, evidence] = optimizer_impl_evidence(in.run, f, trace);
  if (!evidence.empty()) out.evidence.push_back(evidence);
  out.recommendation =
      impl == OptimizerImpl::kFused
          ? "The optimizer is fused already: step it less often (gradient accumulation over larger "
            "effective batches), or keep fewer optimizer states (an 8-bit optimizer such as bitsandbytes')."
          : "Use the fused or foreach implementation (e.g. torch.optim.AdamW(..., fused=True), or "
            "foreach=True), which updates all parameters in a few large operations instead of one per "
            "tensor; fewer, larger parameter tensors help too; then step less often with gradient accumulation.";
  return out;
}

// From the hooks' timed collections when there are any, else from samples
// in <GC> marker frames (a collector that marks them).
std::optional<Finding> gc_pauses_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary || f.steady_ns <= 0) return std::nullopt;
  double share = 0;
  std::string evidence;
  if (f.gc_pauses > 0) {
    share = static_cast<double>(f.gc_pause_ns) / static_cast<double>(f.steady_ns);
    evidence = fmt::format("{} collections on the step thread during steady steps, {:.1f} ms in all, the longest "
                           "{:.1f} ms (timed by gc.callbacks)",
                           f.gc_pauses, static_cast<double>(f.gc_pause_ns) / 1e6, static_cast<double>(f.gc_longest_ns) / 1e6);
  } else {
    uint64_t hits = gc_marker_samples(in.run, f);
    if (hits < kMinRuleSamples) return std::nullopt;
    share = f.sample_share(hits);
    evidence = fmt::format("{} of {} samples of the step thread are in the cyclic garbage collector", hits,
                           f.step_samples.size());
  }
  if (share < kGcShare) return std::nullopt;
  Finding out = time_finding(
      "gc_pauses", share,
      fmt::format("Garbage-collection pauses: {} of step time is in Python's collector", percent_text(share)));
  out.evidence.push_back(evidence);
  out.recommendation =
      "Do not call gc.collect() every step; call gc.freeze() after set-up so long-lived objects leave the "
      "collector's generations; raise gc.set_threshold(), or gc.disable() in the loop with a gc.collect() "
      "every N steps; create fewer short-lived Python objects per step (lists and dicts of tensors, "
      "per-item Python objects).";
  return out;
}

}  // namespace stepscope
