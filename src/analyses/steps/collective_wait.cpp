#include "analyses/steps/collective_wait.hpp"

#include <map>

#include "analyses/recent_answers.hpp"
#include "analyses/spans/string_match.hpp"

namespace stepscope {

namespace {

// Whether a stack holds a frame of torch.distributed's collectives, each
// stack decided once (a run has thousands of stacks and many more samples).
class CollectiveStacks {
 public:
  explicit CollectiveStacks(const Run& run)
      : run_(run), collective_file_(strings_ending_with(run.strings, "torch/distributed/distributed_c10d.py")),
        known_(run.stacks.size(), kUnknown) {}

  bool contains_collective(StackId stack) {
    if (stack == StackTree::kRoot) return false;
    if (known_[stack] == kUnknown) {
      const StackNode& node = run_.stacks.node(stack);
      bool here = collective_file_[run_.frames.get(node.frame).file];
      known_[stack] = here || contains_collective(node.parent) ? kYes : kNo;
    }
    return known_[stack] == kYes;
  }

 private:
  enum : uint8_t { kUnknown, kYes, kNo };
  const Run& run_;
  std::vector<bool> collective_file_;
  std::vector<uint8_t> known_;
};

bool uses_accelerator(const ProcessSteps& p) {
  for (const StepRecord& s : p.steps) {
    if (s.device_peak_bytes >= 0) return true;
  }
  return false;
}

struct WaitCount {
  uint64_t samples = 0;
  uint64_t waiting = 0;
};

}  // namespace

void measure_collective_waits(const Run& run, const PhaseIndex& phases, std::vector<ProcessSteps>& processes) {
  std::map<int64_t, size_t> by_pid;
  for (size_t i = 0; i < processes.size(); ++i) by_pid[processes[i].pid] = i;
  std::vector<bool> on_accelerator;
  for (const ProcessSteps& p : processes) on_accelerator.push_back(uses_accelerator(p));
  CollectiveStacks stacks(run);
  std::vector<WaitCount> counts(processes.size());
  std::vector<StepFinder> finders(processes.begin(), processes.end());
  PhaseFinder phase_finder(phases);
  RecentAnswers<int64_t, size_t> recent_index;
  auto index_of = [&](int64_t pid) {
    auto found = by_pid.find(pid);
    return found == by_pid.end() ? SIZE_MAX : found->second;
  };
  for (const Sample& s : run.samples) {
    const size_t index = recent_index.get(s.pid, index_of);
    if (index == SIZE_MAX) continue;
    const ProcessSteps& p = processes[index];
    const StepRecord* step = finders[index].find(s.tid, s.ts_ns);
    if (!step || step->warmup) continue;
    WaitCount& count = counts[index];
    ++count.samples;
    if (s.state != ThreadState::kIdle) continue;
    bool in_backward =
        !on_accelerator[index] && phase_finder.phase_in_step(p.pid, s.tid, s.ts_ns) == StepPhase::kBackward;
    if (in_backward || stacks.contains_collective(s.stack)) ++count.waiting;
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    if (counts[i].samples == 0) continue;
    processes[i].collective_wait_fraction =
        static_cast<double>(counts[i].waiting) / static_cast<double>(counts[i].samples);
  }
}

}  // namespace stepscope
