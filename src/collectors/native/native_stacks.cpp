#include "collectors/native/native_stacks.hpp"

namespace stepscope {

NativeStacks::NativeStacks(pid_t pid, int64_t period_ns, Run& run, NativeStackStats& stats,
                           std::shared_ptr<SymbolIndexes> indexes)
    : period_ns_(period_ns),
      run_(run),
      unwinder_(pid, std::move(indexes)),
      unmerged_marker_(run.intern_frame(kUnmergedMarkerName, "", 0, FrameKind::kMarker)),
      stats_(stats) {}

NativeStacks::~NativeStacks() = default;

void NativeStacks::begin_round() {
  ++round_;
  // Threads absent from the last round have exited: their events go.
  std::erase_if(threads_, [&](const auto& entry) { return entry.second.round + 1 < round_; });
}

NativeStacks::Thread* NativeStacks::thread(int64_t tid) {
  auto [found, inserted] = threads_.try_emplace(tid);
  Thread& thread = found->second;
  thread.round = round_;
  if (inserted) {
    std::string error;
    thread.perf = PerfStackSampler::open(static_cast<pid_t>(tid), period_ns_, kNativeStackBytes, error);
    if (!thread.perf) {
      ++stats_.refused_threads;
      if (stats_.first_problem.empty()) stats_.first_problem = error;
    }
  }
  return thread.perf ? &thread : nullptr;
}

StackId NativeStacks::merged_stack(const PythonThreadStack& python, bool running,
                                   const PythonFrameId& python_frame) {
  Thread* watched = thread(python.native_tid);
  if (watched == nullptr) return StackTree::kRoot;
  if (watched->perf->take_newest(sample_)) {
    const UnwindResult walk = unwinder_.unwind(sample_, watched->frames);
    watched->complete = walk.complete;
    watched->unwound = true;
    if (!walk.complete) ++stats_.incomplete;
  } else if (!running || !watched->unwound) {
    return StackTree::kRoot;
  }
  const bool merged = merge_stacks(python.frames, watched->frames, watched->complete, merged_);
  ++(merged ? stats_.merged : stats_.unmerged);
  return intern(python, *watched, python_frame);
}

StackId NativeStacks::intern(const PythonThreadStack& python, const Thread& thread,
                             const PythonFrameId& python_frame) {
  StackId id = StackTree::kRoot;
  for (const MergedFrame& frame : merged_) {
    FrameId frame_id = unmerged_marker_;
    if (frame.part == MergedFrame::Part::kPython) frame_id = python_frame(python.frames[frame.index]);
    if (frame.part == MergedFrame::Part::kNative) frame_id = native_frame(thread.frames[frame.index]);
    id = run_.stacks.push(id, frame_id);
  }
  return id;
}

FrameId NativeStacks::native_frame(const NativeFrame& frame) {
  // A pc in no known module may be in a library mapped since the unwinder
  // last read the maps: it is named anew each time until it is known.
  if (frame.module.empty()) return run_.intern_frame(frame.function, frame.module, 0, FrameKind::kNative);
  auto [found, inserted] = frames_.try_emplace(frame.pc, 0);
  if (inserted) found->second = run_.intern_frame(frame.function, frame.module, 0, FrameKind::kNative);
  return found->second;
}

}  // namespace stepscope
