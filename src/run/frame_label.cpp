#include "run/frame_label.hpp"

#include <fmt/format.h>

namespace stepscope {

namespace {

std::string labelled_id(std::string_view what, int64_t id, std::string_view name) {
  if (name.empty()) return fmt::format("{} {}", what, id);
  return fmt::format("{} {} \"{}\"", what, id, name);
}

}  // namespace

std::string frame_label(const StringTable& strings, const Frame& frame) {
  std::string label(shown_function(strings.get(frame.function)));
  const std::string& file = strings.get(frame.file);
  if (frame.kind == FrameKind::kMarker || file.empty()) return label;
  // A native frame's file is the library it is in: its name tells, its folder rarely does.
  if (frame.kind == FrameKind::kNative) return fmt::format("{} ({})", label, file.substr(file.rfind('/') + 1));
  if (frame.line == 0) return fmt::format("{} ({})", label, file);
  return fmt::format("{} ({}:{})", label, file, frame.line);
}

std::vector<std::string> frame_labels(const StringTable& strings, const FrameTable& frames) {
  std::vector<std::string> labels;
  labels.reserve(frames.size());
  for (const Frame& frame : frames.all()) labels.push_back(frame_label(strings, frame));
  return labels;
}

std::string process_label(const Run& run, int64_t pid) {
  const Process* process = run.find_process(pid);
  return labelled_id("process", pid, process ? run.strings.get(process->command) : "");
}

std::string thread_label(const Run& run, int64_t pid, int64_t tid) {
  const Thread* thread = run.find_thread(pid, tid);
  return labelled_id("thread", tid, thread ? run.strings.get(thread->name) : "");
}

}  // namespace stepscope
