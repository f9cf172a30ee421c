// The step phase of a moment on a thread: which of the hooks' phase spans
// (data wait, forward, backward, optimizer) holds it, in the order they claim
// time, or "other" inside a step outside them. What the steps analysis
// attributes samples with, and what the pprof export labels them with.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyses/recent_answers.hpp"
#include "analyses/spans/intervals.hpp"
#include "analyses/steps/steps.hpp"
#include "analyses/thread_key.hpp"
#include "run/run.hpp"

namespace stepscope {

// The step phase a span of the hooks measures (data wait, forward, backward,
// optimizer), or none.
std::optional<StepPhase> measured_phase(SpanKind kind);

// The step of `process` (sorted by end) that `ts` on thread `tid` lies in;
// null outside its steps or on another thread than that step's.
const StepRecord* step_at(const ProcessSteps& process, int64_t tid, int64_t ts);

// step_at for times that mostly come in order, as a run's samples do round
// by round: the step found last, then the one after it, are tried before a
// search. The same answers as step_at.
class StepFinder {
 public:
  explicit StepFinder(const ProcessSteps& process) : process_(&process) {}
  const StepRecord* find(int64_t tid, int64_t ts);

 private:
  const ProcessSteps* process_;
  size_t hint_ = 0;
};

class PhaseIndex {
 public:
  using ThreadPhases = std::array<Intervals, kStepPhaseCount>;  // by StepPhase, merged

  explicit PhaseIndex(const Run& run);

  // The phase spans of thread (pid, tid), or null when it has none.
  const ThreadPhases* find(int64_t pid, int64_t tid) const;

  // The phase of `ts` on thread `tid` within the steps of `process` (sorted
  // by end); none outside its steps or on another thread than its step's.
  std::optional<StepPhase> phase_at(const ProcessSteps& process, int64_t tid, int64_t ts) const;
  // The phase of `ts` on thread (pid, tid), known to lie in one of its steps.
  StepPhase phase_in_step(int64_t pid, int64_t tid, int64_t ts) const;

 private:
  std::map<std::pair<int64_t, int64_t>, ThreadPhases> by_thread_;
};

// PhaseIndex::phase_in_step for a run's samples, each thread's in time
// order: a thread's phase spans are looked up once and walked on from the
// last answer (CoverFinder), where a tree lookup and four searches a sample
// were a sixth of a job's report. The same answers; `index` must outlive it.
class PhaseFinder {
 public:
  explicit PhaseFinder(const PhaseIndex& index) : index_(&index) {}
  StepPhase phase_in_step(int64_t pid, int64_t tid, int64_t ts);

 private:
  std::vector<CoverFinder>& finders_of(int64_t pid, int64_t tid);

  const PhaseIndex* index_;
  std::unordered_map<ThreadKey, std::vector<CoverFinder>, ThreadKeyHash> threads_;  // by measured phase
  RecentAnswers<ThreadKey, std::vector<CoverFinder>*, ThreadKeyHash> recent_;
};

}  // namespace stepscope
