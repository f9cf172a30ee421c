#include "analyses/steps/collective_wait.hpp"

#include "analyses/spans/string_match.hpp"

namespace stepscope {

namespace {

enum : uint8_t { kUnknown, kYes, kNo };

bool uses_accelerator(const ProcessSteps& p) {
  for (const StepRecord& s : p.steps) {
    if (s.device_peak_bytes >= 0) return true;
  }
  return false;
}

}  // namespace

CollectiveWaits::CollectiveWaits(const Run& run, const std::vector<ProcessSteps>& processes)
    : run_(run), collective_file_(strings_ending_with(run.strings, "torch/distributed/distributed_c10d.py")),
      known_(run.stacks.size(), kUnknown), counts_(processes.size()) {
  for (const ProcessSteps& p : processes) on_accelerator_.push_back(uses_accelerator(p));
}

bool CollectiveWaits::contains_collective(StackId stack) {
  if (stack == StackTree::kRoot) return false;
  if (known_[stack] == kUnknown) {
    const StackNode& node = run_.stacks.node(stack);
    bool here = collective_file_[run_.frames.get(node.frame).file];
    known_[stack] = here || contains_collective(node.parent) ? kYes : kNo;
  }
  return known_[stack] == kYes;
}

bool CollectiveWaits::needs_phase(size_t index, const StepRecord& step, const Sample& s) const {
  return !step.warmup && s.state == ThreadState::kIdle && !on_accelerator_[index];
}

void CollectiveWaits::add(size_t index, const StepRecord& step, const Sample& s, std::optional<StepPhase> phase) {
  if (step.warmup) return;
  Count& count = counts_[index];
  ++count.samples;
  if (s.state != ThreadState::kIdle) return;
  bool in_backward = !on_accelerator_[index] && phase == StepPhase::kBackward;
  if (in_backward || contains_collective(s.stack)) ++count.waiting;
}

void CollectiveWaits::store(std::vector<ProcessSteps>& processes) const {
  for (size_t i = 0; i < processes.size(); ++i) {
    if (counts_[i].samples == 0) continue;
    processes[i].collective_wait_fraction =
        static_cast<double>(counts_[i].waiting) / static_cast<double>(counts_[i].samples);
  }
}

}  // namespace stepscope
