#include "analyses/steps/phase_index.hpp"

#include <algorithm>

namespace stepscope {

std::optional<StepPhase> measured_phase(SpanKind kind) {
  switch (kind) {
    case SpanKind::kDataWait:
      return StepPhase::kDataWait;
    case SpanKind::kForward:
      return StepPhase::kForward;
    case SpanKind::kBackward:
      return StepPhase::kBackward;
    case SpanKind::kOptimizer:
      return StepPhase::kOptimizer;
    default:
      return std::nullopt;
  }
}

PhaseIndex::PhaseIndex(const Run& run) {
  for (const Span& s : run.spans) {
    if (auto phase = measured_phase(s.kind); phase && s.end_ns >= s.start_ns) {
      by_thread_[{s.pid, s.tid}][static_cast<size_t>(*phase)].push_back({s.start_ns, s.end_ns});
    }
  }
  for (auto& [key, phases] : by_thread_) {
    for (Intervals& spans : phases) spans = merge_unsorted(std::move(spans));
  }
}

const PhaseIndex::ThreadPhases* PhaseIndex::find(int64_t pid, int64_t tid) const {
  auto it = by_thread_.find({pid, tid});
  return it == by_thread_.end() ? nullptr : &it->second;
}

const StepRecord* step_at(const ProcessSteps& process, int64_t tid, int64_t ts) {
  auto step = std::lower_bound(process.steps.begin(), process.steps.end(), ts,
                               [](const StepRecord& s, int64_t t) { return s.end_ns <= t; });
  if (step == process.steps.end() || step->start_ns > ts || step->tid != tid) return nullptr;
  return &*step;
}

const StepRecord* StepFinder::find(int64_t tid, int64_t ts) {
  const std::vector<StepRecord>& steps = process_->steps;
  // The first step that ends after ts, as step_at's search finds it (steps are sorted by end).
  auto first_ending_after = [&](size_t i) { return steps[i].end_ns > ts && (i == 0 || steps[i - 1].end_ns <= ts); };
  size_t at;
  if (hint_ < steps.size() && first_ending_after(hint_)) {
    at = hint_;
  } else if (hint_ + 1 < steps.size() && first_ending_after(hint_ + 1)) {
    at = hint_ + 1;
  } else {
    at = static_cast<size_t>(std::lower_bound(steps.begin(), steps.end(), ts,
                                              [](const StepRecord& s, int64_t t) { return s.end_ns <= t; }) -
                             steps.begin());
  }
  if (at == steps.size()) return nullptr;
  hint_ = at;
  return steps[at].start_ns > ts || steps[at].tid != tid ? nullptr : &steps[at];
}

std::optional<StepPhase> PhaseIndex::phase_at(const ProcessSteps& process, int64_t tid, int64_t ts) const {
  if (!step_at(process, tid, ts)) return std::nullopt;
  return phase_in_step(process.pid, tid, ts);
}

StepPhase PhaseIndex::phase_in_step(int64_t pid, int64_t tid, int64_t ts) const {
  if (const ThreadPhases* phases = find(pid, tid)) {
    for (size_t i = 0; i + 1 < kStepPhaseCount; ++i) {
      if (covers((*phases)[i], ts)) return static_cast<StepPhase>(i);
    }
  }
  return StepPhase::kOther;
}

std::vector<CoverFinder>& PhaseFinder::finders_of(int64_t pid, int64_t tid) {
  auto [found, added] = threads_.try_emplace({pid, tid});
  std::vector<CoverFinder>& phases = found->second;
  if (added) {
    if (const PhaseIndex::ThreadPhases* spans = index_->find(pid, tid)) {
      for (size_t i = 0; i + 1 < kStepPhaseCount; ++i) phases.emplace_back((*spans)[i]);
    }
  }
  return phases;
}

StepPhase PhaseFinder::phase_in_step(int64_t pid, int64_t tid, int64_t ts) {
  std::vector<CoverFinder>& phases =
      *recent_.get({pid, tid}, [&](const ThreadKey& thread) { return &finders_of(thread.first, thread.second); });
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases[i].covers(ts)) return static_cast<StepPhase>(i);
  }
  return StepPhase::kOther;
}

}  // namespace stepscope
