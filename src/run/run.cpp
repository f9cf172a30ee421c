#include "run/run.hpp"

#include <array>

#include "util/whole_number.hpp"

namespace stepscope {

namespace {
constexpr std::array<const char*, kSpanKindCount> kSpanKindNames = {
    "other",   "step",    "data_wait",    "forward", "backward", "optimizer",
    "user_range", "cpu_op", "runtime_call", "kernel", "memcpy",   "memset",
    "python_function", "sync", "device_annotation",
};
}  // namespace

bool runs_on_device(SpanKind kind) {
  return kind == SpanKind::kKernel || kind == SpanKind::kMemcpy || kind == SpanKind::kMemset ||
         kind == SpanKind::kDeviceAnnotation;
}

const char* span_kind_name(SpanKind kind) {
  auto index = static_cast<size_t>(kind);
  return index < kSpanKindNames.size() ? kSpanKindNames[index] : "other";
}

std::optional<SpanKind> span_kind_from_name(std::string_view name) {
  for (size_t i = 0; i < kSpanKindNames.size(); ++i) {
    if (name == kSpanKindNames[i]) return static_cast<SpanKind>(i);
  }
  return std::nullopt;
}

const char* thread_state_name(ThreadState state) {
  switch (state) {
    case ThreadState::kRunning:
      return "running";
    case ThreadState::kIdle:
      return "idle";
    case ThreadState::kDiskWait:
      return "disk wait";
    case ThreadState::kUnknown:
      break;
  }
  return "unknown";
}

ThreadState thread_state_from_name(std::string_view name) {
  for (ThreadState state : {ThreadState::kRunning, ThreadState::kIdle, ThreadState::kDiskWait}) {
    if (name == thread_state_name(state)) return state;
  }
  return ThreadState::kUnknown;
}

FrameId Run::intern_frame(std::string_view function, std::string_view file, int32_t line,
                          FrameKind kind) {
  return frames.intern({strings.intern(function), strings.intern(file), line, kind});
}

Process& Run::add_process(int64_t pid, std::string_view command, int64_t parent_pid) {
  Process& p = processes.emplace_back();
  p.pid = pid;
  p.parent_pid = parent_pid;
  p.command = strings.intern(command);
  return p;
}

Thread& Run::add_thread(int64_t pid, int64_t tid, std::string_view name) {
  return threads.emplace_back(Thread{pid, tid, strings.intern(name)});
}

const Process* Run::find_process(int64_t pid) const {
  for (const Process& p : processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

const Thread* Run::find_thread(int64_t pid, int64_t tid) const {
  for (const Thread& t : threads) {
    if (t.pid == pid && t.tid == tid) return &t;
  }
  return nullptr;
}

std::optional<int64_t> Run::metadata_int(const std::string& key) const {
  auto found = metadata.find(key);
  if (found == metadata.end()) return std::nullopt;
  return whole_number(found->second);
}

std::optional<int64_t> Run::sample_period_ns() const {
  std::optional<int64_t> period = metadata_int("sample_period_ns");
  if (period && *period <= 0) return std::nullopt;
  return period;
}

}  // namespace stepscope
