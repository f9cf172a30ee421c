// The Run: the one model that collectors fill, analyses read and renderers
// draw. It is plain data; persistence lives in run_file.hpp.
//
// Conventions (see docs/run-format.md):
//  * time is int64 nanoseconds; recorded runs use CLOCK_MONOTONIC, imported
//    traces keep their own clock and say which in metadata "clock";
//  * tables are append-only and ids are dense indexes, so an incremental
//    writer only needs to remember how many rows it has already written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/stack_tree.hpp"
#include "run/string_table.hpp"

namespace stepscope {

inline constexpr int kRunSchemaVersion = 6;
// Older versions this build still reads (missing columns take their defaults).
inline constexpr int kOldestReadableRunSchemaVersion = 1;

struct Process {
  int64_t pid = 0;
  int64_t parent_pid = 0;  // 0 when unknown or outside the recorded tree
  StringId command = StringTable::kEmpty;
  int64_t start_ns = 0;
  int64_t end_ns = 0;        // 0 while running
  int32_t exit_status = -1;  // as a shell reports it (128 + signal); -1 unknown
  bool operator==(const Process&) const = default;
};

struct Thread {
  int64_t pid = 0;
  int64_t tid = 0;
  StringId name = StringTable::kEmpty;
  bool operator==(const Thread&) const = default;
};

// What a thread was doing when sampled, as far as the collector can tell.
enum class ThreadState : uint8_t {
  kUnknown = 0,
  kRunning = 1,  // on CPU (R)
  kIdle = 2,     // sleeping, waiting on a lock or a condition (S)
  kDiskWait = 3, // uninterruptible, usually I/O (D)
};

// "running", "idle", "disk wait" or "unknown", and back (unknown for any other name).
const char* thread_state_name(ThreadState state);
ThreadState thread_state_from_name(std::string_view name);

// 24 bytes: an hour of eight ranks holds 21 M of them in memory. Samples come
// only from recordings, whose processes and threads have Linux ids (below
// 2^22); a run file with larger ones is refused.
struct Sample {
  int64_t ts_ns = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  StackId stack = StackTree::kRoot;
  ThreadState state = ThreadState::kUnknown;
  bool holds_gil = false;  // false also when the interpreter does not tell
};

// Whether a process or thread id fits a Sample.
inline bool fits_sample_id(int64_t id) { return id >= INT32_MIN && id <= INT32_MAX; }

// Spans are intervals on a track. Host spans live on (pid, tid); device
// activity lives on (device pid, stream tid) as the importer or GPU collector
// assigns them. Later issues add kinds; the stored value is the enum number,
// so existing numbers never change.
enum class SpanKind : uint8_t {
  kOther = 0,
  kStep = 1,
  kDataWait = 2,
  kForward = 3,
  kBackward = 4,
  kOptimizer = 5,
  kUserRange = 6,
  kCpuOp = 7,
  kRuntimeCall = 8,
  kKernel = 9,
  kMemcpy = 10,
  kMemset = 11,
  kPythonFunction = 12,    // a Python call recorded by a tracer (torch.profiler with_stack)
  kSync = 13,              // a device synchronization (Kineto's cuda_sync)
  kDeviceAnnotation = 14,  // a user range mirrored onto a device stream
};
inline constexpr int kSpanKindCount = 15;
const char* span_kind_name(SpanKind kind);
// Kernels, copies, memsets and the user ranges mirrored onto a device stream:
// activity on an accelerator's queues, not on a CPU thread.
bool runs_on_device(SpanKind kind);
std::optional<SpanKind> span_kind_from_name(std::string_view name);

using SpanId = uint32_t;

struct Span {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  SpanKind kind = SpanKind::kOther;
  StringId name = StringTable::kEmpty;
  // Facts some spans carry, 0 or empty when absent. `correlation` pairs a
  // runtime launch with the device activity it caused (Kineto's
  // "correlation"); `bytes` is the size of a memcpy or memset; `detail` is
  // free text the analyses group by: a cpu op's input shapes as the trace
  // wrote them ("[[2, 3], []]").
  int64_t correlation = 0;
  int64_t bytes = 0;
  StringId detail = StringTable::kEmpty;
};

// A causal link between two spans (a launch and its kernel, forward and
// backward of one op).
struct Flow {
  SpanId from = 0;
  SpanId to = 0;
  StringId kind = StringTable::kEmpty;
};

using CounterTrackId = uint32_t;

struct CounterTrack {
  StringId name = StringTable::kEmpty;
  int64_t pid = 0;  // 0 for system-wide counters
  StringId unit = StringTable::kEmpty;
};

struct CounterValue {
  CounterTrackId track = 0;
  int64_t ts_ns = 0;
  double value = 0;
};

struct Run {
  StringTable strings;
  FrameTable frames;
  StackTree stacks;
  std::vector<Process> processes;
  std::vector<Thread> threads;
  std::vector<Sample> samples;
  std::vector<Span> spans;
  std::vector<Flow> flows;
  std::vector<CounterTrack> counter_tracks;
  std::vector<CounterValue> counter_values;
  std::map<std::string, std::string> metadata;
  // How many of its first samples and counter values a recorder has dropped
  // from memory once its file held them (RunWriter::release_written), so that
  // its memory stays flat however long it records: samples[0] is the run's
  // sample number samples_dropped. 0 in a run read from a file or imported.
  size_t samples_dropped = 0;
  size_t counter_values_dropped = 0;

  // Conveniences for collectors and tests.
  FrameId intern_frame(std::string_view function, std::string_view file, int32_t line,
                       FrameKind kind = FrameKind::kPython);
  Process& add_process(int64_t pid, std::string_view command, int64_t parent_pid = 0);
  Thread& add_thread(int64_t pid, int64_t tid, std::string_view name);

  const Process* find_process(int64_t pid) const;
  const Thread* find_thread(int64_t pid, int64_t tid) const;

  // Metadata `key` as a decimal integer; empty when absent or not one.
  std::optional<int64_t> metadata_int(const std::string& key) const;
  // The sampling period, from metadata "sample_period_ns"; each sample stands
  // for one period of wall time. Empty when the run does not say.
  std::optional<int64_t> sample_period_ns() const;
};

}  // namespace stepscope
