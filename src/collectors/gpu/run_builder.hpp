// Turns decoded GPU activity records (collectors/gpu/file_decoder.hpp) into
// parts of a Run, in the shapes the Kineto importer gives the same activity,
// so the ops and GPU analyses and the exports treat recorded and imported
// runs alike:
//  * API calls: runtime_call spans on the calling thread (pid, tid);
//  * kernels, copies, memsets, syncs: spans on the device's track
//    (pid = device index, tid = stream id), named as Kineto names them
//    ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)", "Stream Sync"),
//    copies and memsets with `bytes`, copies with `detail` "HtoD Pageable";
//  * an `ac2g` flow from each launch to the device work it caused;
//  * NVTX ranges: user_range spans on their thread; CUPTI overhead: other.
// Correlation ids are per process in CUPTI; the Run's are made unique across
// the recorded tree as (pid << 32) | CUPTI's id.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/gpu/file_decoder.hpp"
#include "run/run.hpp"

namespace stepscope::gpu {

// Names of CUPTI's enum numbers, as Kineto prints them.
const char* memcpy_kind_name(uint8_t copy_kind);   // "HtoD"
const char* memory_kind_name(uint8_t memory_kind); // "Pageable"
const char* sync_type_name(uint8_t sync_type);     // "Stream Sync"

int64_t run_correlation(int64_t pid, uint32_t correlation);

class RunBuilder {
 public:
  void add(Run& run, int64_t pid, const Record& record);
  // The recording ends: syncs whose context never got a device and ranges
  // never closed are counted in metadata, not guessed.
  void finish(Run& run);

  size_t spans_added() const { return spans_added_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct OpenMarker {
    int64_t start_ns = 0;
    int64_t tid = 0;
    StringId name = StringTable::kEmpty;
  };
  struct ProcessState {
    std::unordered_map<uint32_t, StringId> strings;
    std::unordered_map<uint32_t, StringId> kernel_names;  // string id -> its demangled form
    std::unordered_map<uint32_t, uint32_t> context_device;
    std::unordered_map<uint32_t, OpenMarker> open_markers;
    std::vector<Activity> unplaced_syncs;  // their context's device not known yet
    int64_t clock_offset_ns = 0;           // add to activity times for CLOCK_MONOTONIC
  };

  void add_activity(Run& run, int64_t pid, ProcessState& state, const Activity& a);
  void add_text(Run& run, int64_t pid, ProcessState& state, const TextRecord& t);
  void add_host_span(Run& run, int64_t pid, ProcessState& state, const Activity& a, SpanKind kind);
  void add_device_span(Run& run, int64_t pid, ProcessState& state, const Activity& a, uint32_t device);
  void add_marker(Run& run, int64_t pid, ProcessState& state, const Activity& a);
  void learn_context(Run& run, int64_t pid, ProcessState& state, uint32_t context, uint32_t device);
  std::optional<SpanId> push_span(Run& run, Span span, const ProcessState& state);
  void link(Run& run, int64_t correlation, SpanId span, bool is_launch);
  void note_device_track(Run& run, uint32_t device, int64_t stream);
  void note_host_thread(Run& run, int64_t pid, int64_t tid);
  StringId name_of(Run& run, const ProcessState& state, uint32_t id);
  StringId kernel_name_of(Run& run, ProcessState& state, uint32_t id);
  StringId device_span_name(Run& run, ProcessState& state, const Activity& a);

  std::unordered_map<int64_t, ProcessState> processes_;
  std::unordered_map<int64_t, SpanId> launches_;                // run correlation -> API span
  std::unordered_map<int64_t, std::vector<SpanId>> waiting_;   // device spans before their launch
  std::map<std::pair<int64_t, int64_t>, bool> tracks_;         // known (pid, tid)
  std::map<int64_t, bool> devices_;
  StringId ac2g_ = StringTable::kEmpty;
  size_t spans_added_ = 0;
  uint64_t bad_times_ = 0;
  uint64_t unknown_strings_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace stepscope::gpu
