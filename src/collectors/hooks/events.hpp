// The events stepscope's in-process Python hooks send, and how they become
// parts of a Run (the places of a step through step_assembly.hpp).
//
// A datagram is a header line, then records (docs/steps.md, "Wire format"):
// `SS1 PID` and UTF-8 text, one record per line; or `SS2 PID` and binary
// records of numbers, eight native-endian int64 each (the sender is on this
// machine), which the hooks send at every step because they need no
// formatting. Datagrams come from the recorded program,
// so they are untrusted: a record with a bad field is counted and dropped,
// and nothing in one can crash the recorder or stretch the run's time range.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/hooks/step_assembly.hpp"
#include "run/run.hpp"

namespace stepscope {

struct HookDatagram {
  int64_t pid = 0;
  std::vector<HookSpanEvent> spans;  // worker batches, gc pauses, user ranges
  std::vector<HookPlace> places;     // in the order the process appended them
  std::vector<std::pair<std::string, std::string>> facts;  // process facts: rank, torch, ...
  std::vector<std::string> disabled;  // "hook: message" for each hook that turned itself off
  uint64_t dropped_by_sender = 0;     // records the process could not send earlier
  uint64_t bad_records = 0;
};

// Nullopt when the datagram is not a stepscope one at all (bad header).
std::optional<HookDatagram> decode_hook_datagram(std::string_view data);

// Adds decoded datagrams to a Run: each process's places through its step
// assembly, spans on (pid, tid), per-step counters (step_samples,
// step_tokens, step_peak_rss, step_peak_device_memory, each at the step's
// end), process facts as metadata `hooks.PID.KEY`, and the totals of bad and
// dropped records as metadata. finish() closes what each process left open
// (its last round of optimizers, a segment held), once no datagram can come.
class HookRunBuilder {
 public:
  // Processes whose steps are assembled at once: the pid is what a datagram
  // claims, so a sender cannot make the recorder hold state for any number.
  // The places of a process beyond it are counted as bad records.
  static constexpr size_t kMaxProcesses = 1024;

  void add(Run& run, const HookDatagram& datagram);
  void add_bad_datagram(Run& run);
  void finish(Run& run);

 private:
  void add_assembled(Run& run, int64_t pid, const AssembledSteps& parts);
  CounterTrackId track(Run& run, std::string_view name, int64_t pid, std::string_view unit);
  void add_counter(Run& run, std::string_view name, int64_t pid, std::string_view unit,
                   int64_t ts_ns, int64_t value);
  void update_totals(Run& run);

  std::map<int64_t, StepAssembler> assemblers_;  // by pid
  std::map<std::pair<std::string, int64_t>, CounterTrackId> tracks_;
  uint64_t bad_ = 0;
  uint64_t dropped_ = 0;
  size_t disabled_ = 0;
};

}  // namespace stepscope
