#include "collectors/native/native_snapshot.hpp"

#include <time.h>

#include "collectors/native/native_stacks.hpp"
#include "collectors/native/stack_merge.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// Threads on a CPU are copied after each millisecond of it
// (kNativeCopyPeriodNs); the wait lets one that shares its CPU with others
// run that long.
constexpr long kWaitNs = 30'000'000;

SnapshotFrame snapshot_frame(const PythonFrame& frame) {
  return {std::string(frame.function), std::string(frame.file), frame.line, FrameKind::kPython};
}

SnapshotFrame snapshot_frame(const NativeFrame& frame) {
  return {std::string(frame.function), std::string(frame.module), 0, FrameKind::kNative};
}

}  // namespace

NativeSnapshot::NativeSnapshot(pid_t pid, const std::vector<int64_t>& tids, std::shared_ptr<SymbolIndexes> indexes) {
  try {
    unwinder_ = std::make_unique<NativeUnwinder>(pid, std::move(indexes));
  } catch (const InputError& e) {
    problem_ = e.what();
    return;
  }
  for (int64_t tid : tids) {
    std::string error;
    auto perf = PerfStackSampler::open(static_cast<pid_t>(tid), kNativeCopyPeriodNs, kNativeStackBytes, error);
    if (perf) {
      threads_.emplace(tid, std::move(perf));
    } else if (problem_.empty()) {
      problem_ = error;
    }
  }
  if (threads_.empty()) return;
  const timespec wait{0, kWaitNs};
  nanosleep(&wait, nullptr);
}

NativeSnapshot::~NativeSnapshot() = default;

bool NativeSnapshot::merged_frames(const PythonThreadStack& python, std::vector<SnapshotFrame>& out) {
  auto found = threads_.find(python.native_tid);
  UserStackSample sample;
  if (found == threads_.end() || !found->second->take_newest(sample)) return false;
  std::vector<NativeFrame> native;
  const UnwindResult walk = unwinder_->unwind(sample, native);
  std::vector<MergedFrame> merged;
  merge_stacks(python.frames, native, walk.complete, merged);
  out.clear();
  for (auto frame = merged.rbegin(); frame != merged.rend(); ++frame) {
    switch (frame->part) {
      case MergedFrame::Part::kPython: out.push_back(snapshot_frame(python.frames[frame->index])); break;
      case MergedFrame::Part::kNative: out.push_back(snapshot_frame(native[frame->index])); break;
      case MergedFrame::Part::kUnmergedMarker:
        out.push_back({std::string(kUnmergedMarkerName), "", 0, FrameKind::kMarker});
        break;
    }
  }
  return true;
}

}  // namespace stepscope
