#include "collectors/gpu/run_builder.hpp"

#include <array>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "util/demangle.hpp"

namespace stepscope::gpu {

namespace {

template <size_t N>
const char* name_in(const std::array<const char*, N>& names, uint8_t value) {
  return value < N ? names[value] : "Unknown";
}

bool is_device_work(RecordType type) {
  return type == RecordType::kKernel || type == RecordType::kMemcpy || type == RecordType::kMemset ||
         type == RecordType::kSync;
}

SpanKind device_span_kind(RecordType type) {
  switch (type) {
    case RecordType::kKernel: return SpanKind::kKernel;
    case RecordType::kMemcpy: return SpanKind::kMemcpy;
    case RecordType::kMemset: return SpanKind::kMemset;
    default: return SpanKind::kSync;
  }
}

// The host side of a copy decides whether it was pageable or pinned.
uint8_t host_side_kind(const Activity& a) {
  constexpr uint8_t kDevice = 3;
  if (a.sub[1] != kDevice) return a.sub[1];
  return a.sub[2];
}

}  // namespace

// CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind and
// CUpti_ActivitySynchronizationType numbers (cupti_activity.h); the unit
// tests check them against the header.
const char* memcpy_kind_name(uint8_t copy_kind) {
  static constexpr std::array<const char*, 11> kNames = {
      "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return name_in(kNames, copy_kind);
}

const char* memory_kind_name(uint8_t memory_kind) {
  static constexpr std::array<const char*, 8> kNames = {
      "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};
  return name_in(kNames, memory_kind);
}

const char* sync_type_name(uint8_t sync_type) {
  static constexpr std::array<const char*, 5> kNames = {
      "Unknown Sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync"};
  return name_in(kNames, sync_type);
}

int64_t run_correlation(int64_t pid, uint32_t correlation) {
  if (correlation == 0) return 0;
  return (pid << 32) | static_cast<int64_t>(correlation);
}

void RunBuilder::add(Run& run, int64_t pid, const Record& record) {
  ProcessState& state = processes_[pid];
  if (const auto* a = std::get_if<Activity>(&record)) {
    add_activity(run, pid, state, *a);
  } else if (const auto* c = std::get_if<Clock>(&record)) {
    state.clock_offset_ns = c->activity_is_monotonic ? 0 : c->monotonic_ns - c->activity_ns;
  } else {
    add_text(run, pid, state, std::get<TextRecord>(record));
  }
}

void RunBuilder::add_text(Run& run, int64_t pid, ProcessState& state, const TextRecord& t) {
  if (t.type == RecordType::kString) {
    state.strings[t.id] = run.strings.intern(t.text);
    state.kernel_names.erase(t.id);
    return;
  }
  std::string note = fmt::format("GPU collector in pid {}: {}", pid, t.text);
  run.metadata[fmt::format("gpu.{}.note", pid)] = t.text;
  for (const std::string& known : notes_) {
    if (known.ends_with(t.text)) return;  // every process of the tree says the same
  }
  notes_.push_back(std::move(note));
}

void RunBuilder::add_activity(Run& run, int64_t pid, ProcessState& state, const Activity& a) {
  if (a.type == RecordType::kContext) return learn_context(run, pid, state, a.context, a.device);
  if (a.type == RecordType::kMarker) return add_marker(run, pid, state, a);
  if (a.end_ns < a.start_ns || a.start_ns <= 0) {
    ++bad_times_;
    run.metadata["gpu_bad_timestamps"] = std::to_string(bad_times_);
    return;
  }
  if (a.type == RecordType::kApiCall) return add_host_span(run, pid, state, a, SpanKind::kRuntimeCall);
  if (a.type == RecordType::kOverhead) return add_host_span(run, pid, state, a, SpanKind::kOther);
  if (!is_device_work(a.type)) return;
  if (a.type != RecordType::kSync) learn_context(run, pid, state, a.context, a.device);
  auto device = state.context_device.find(a.context);
  if (device == state.context_device.end()) {
    state.unplaced_syncs.push_back(a);
    return;
  }
  add_device_span(run, pid, state, a, device->second);
}

void RunBuilder::learn_context(Run& run, int64_t pid, ProcessState& state, uint32_t context, uint32_t device) {
  if (!state.context_device.emplace(context, device).second) return;
  std::vector<Activity> waiting;
  waiting.swap(state.unplaced_syncs);
  for (const Activity& sync : waiting) {
    if (sync.context == context) {
      add_device_span(run, pid, state, sync, device);
    } else {
      state.unplaced_syncs.push_back(sync);
    }
  }
}

// Times a file could only hold by corruption (past year 2100 on either
// clock, or shifted out of range) are counted, never wrapped around.
std::optional<SpanId> RunBuilder::push_span(Run& run, Span span, const ProcessState& state) {
  constexpr int64_t kLatest = int64_t{4'102'444'800} * 1'000'000'000;  // 2100-01-01 in ns
  if (span.start_ns > kLatest || span.end_ns > kLatest ||
      __builtin_add_overflow(span.start_ns, state.clock_offset_ns, &span.start_ns) ||
      __builtin_add_overflow(span.end_ns, state.clock_offset_ns, &span.end_ns) || span.start_ns < 0) {
    ++bad_times_;
    run.metadata["gpu_bad_timestamps"] = std::to_string(bad_times_);
    return std::nullopt;
  }
  run.spans.push_back(span);
  ++spans_added_;
  return static_cast<SpanId>(run.spans.size() - 1);
}

void RunBuilder::add_host_span(Run& run, int64_t pid, ProcessState& state, const Activity& a, SpanKind kind) {
  Span span{a.start_ns, a.end_ns, pid, a.track, kind, name_of(run, state, a.name)};
  span.correlation = kind == SpanKind::kRuntimeCall ? run_correlation(pid, a.correlation) : 0;
  std::optional<SpanId> id = push_span(run, span, state);
  if (id && span.correlation != 0) link(run, span.correlation, *id, true);
}

void RunBuilder::add_device_span(Run& run, int64_t pid, ProcessState& state, const Activity& a, uint32_t device) {
  int64_t stream = a.track;
  note_device_track(run, device, stream);
  Span span{a.start_ns, a.end_ns, device, stream, device_span_kind(a.type), device_span_name(run, state, a)};
  span.correlation = run_correlation(pid, a.correlation);
  if (a.type == RecordType::kMemcpy || a.type == RecordType::kMemset) {
    span.bytes = a.bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                     ? 0 : static_cast<int64_t>(a.bytes);
  }
  if (a.type == RecordType::kMemcpy) {
    span.detail = run.strings.intern(
        fmt::format("{} {}", memcpy_kind_name(a.sub[0]), memory_kind_name(host_side_kind(a))));
  }
  std::optional<SpanId> id = push_span(run, span, state);
  if (id && span.correlation != 0) link(run, span.correlation, *id, false);
}

StringId RunBuilder::device_span_name(Run& run, ProcessState& state, const Activity& a) {
  switch (a.type) {
    case RecordType::kKernel: return kernel_name_of(run, state, a.name);
    case RecordType::kMemcpy:
      return run.strings.intern(fmt::format("Memcpy {} ({} -> {})", memcpy_kind_name(a.sub[0]),
                                            memory_kind_name(a.sub[1]), memory_kind_name(a.sub[2])));
    case RecordType::kMemset:
      return run.strings.intern(fmt::format("Memset ({})", memory_kind_name(a.sub[0])));
    default: return run.strings.intern(sync_type_name(a.sub[0]));
  }
}

// A launch may reach the file before or after its device work (they come in
// different CUPTI buffers), and one launch can cause several (a graph).
void RunBuilder::link(Run& run, int64_t correlation, SpanId span, bool is_launch) {
  if (ac2g_ == StringTable::kEmpty) ac2g_ = run.strings.intern("ac2g");
  if (is_launch) {
    launches_[correlation] = span;
    auto waiting = waiting_.find(correlation);
    if (waiting == waiting_.end()) return;
    for (SpanId device : waiting->second) run.flows.push_back(Flow{span, device, ac2g_});
    waiting_.erase(waiting);
    return;
  }
  auto launch = launches_.find(correlation);
  if (launch != launches_.end()) {
    run.flows.push_back(Flow{launch->second, span, ac2g_});
  } else {
    waiting_[correlation].push_back(span);
  }
}

void RunBuilder::add_marker(Run& run, int64_t pid, ProcessState& state, const Activity& a) {
  auto phase = static_cast<MarkerPhase>(a.sub[0]);
  if (phase == MarkerPhase::kStart) {
    state.open_markers[a.id] = OpenMarker{a.start_ns, a.track, name_of(run, state, a.name)};
    return;
  }
  if (phase == MarkerPhase::kInstant) {
    push_span(run, Span{a.start_ns, a.start_ns, pid, a.track, SpanKind::kUserRange, name_of(run, state, a.name)}, state);
    return;
  }
  auto open = state.open_markers.find(a.id);
  if (open == state.open_markers.end()) return;
  OpenMarker marker = open->second;
  state.open_markers.erase(open);
  if (a.start_ns < marker.start_ns) {
    ++bad_times_;
    run.metadata["gpu_bad_timestamps"] = std::to_string(bad_times_);
    return;
  }
  push_span(run, Span{marker.start_ns, a.start_ns, pid, marker.tid, SpanKind::kUserRange, marker.name}, state);
}

void RunBuilder::note_device_track(Run& run, uint32_t device, int64_t stream) {
  if (!devices_.contains(device)) {
    devices_[device] = true;
    run.add_process(device, fmt::format("GPU {}", device));
  }
  if (tracks_.emplace(std::pair<int64_t, int64_t>{device, stream}, true).second) {
    run.add_thread(device, stream, stream == kNoStream ? fmt::format("Device {}", device)
                                                       : fmt::format("stream {}", stream));
  }
}

// Demangled once per name of a process, not once per launch of a kernel.
StringId RunBuilder::kernel_name_of(Run& run, ProcessState& state, uint32_t id) {
  auto known = state.kernel_names.find(id);
  if (known != state.kernel_names.end()) return known->second;
  if (!state.strings.contains(id)) return name_of(run, state, id);
  StringId name = run.strings.intern(demangled(run.strings.get(state.strings[id])));
  state.kernel_names.emplace(id, name);
  return name;
}

StringId RunBuilder::name_of(Run& run, const ProcessState& state, uint32_t id) {
  if (id == 0) return StringTable::kEmpty;
  auto found = state.strings.find(id);
  if (found != state.strings.end()) return found->second;
  ++unknown_strings_;
  run.metadata["gpu_unknown_names"] = std::to_string(unknown_strings_);
  return run.strings.intern("(unknown)");
}

void RunBuilder::finish(Run& run) {
  size_t unplaced = 0, open = 0;
  for (auto& [pid, state] : processes_) {
    unplaced += state.unplaced_syncs.size();
    open += state.open_markers.size();
  }
  if (unplaced) run.metadata["gpu_unplaced_syncs"] = std::to_string(unplaced);
  if (open) run.metadata["gpu_unclosed_ranges"] = std::to_string(open);
}

}  // namespace stepscope::gpu
