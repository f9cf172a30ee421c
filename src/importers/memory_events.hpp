// The caching allocator's memory events of a PyTorch profiler trace
// (profile_memory=True): instant events named "[memory]" whose args carry
// "Device Type", "Device Id", "Bytes", "Addr" and the allocator's totals
// after the event, "Total Allocated" and "Total Reserved". They become two
// counter tracks per process and GPU (docs/import.md):
// process.gpu.<i>.allocated_bytes and process.gpu.<i>.reserved_bytes.
//
// Kept apart from the event reader, which parses no args of instant
// events: the few traces with memory events pay a second parse of those
// events only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

#include <simdjson.h>

#include "importers/chrome_trace_event.hpp"
#include "run/run.hpp"

namespace stepscope {

// A "[memory]" instant event: the importer's cue to call MemoryEventImporter::add.
inline bool is_memory_event(const EventFields& fields) {
  return fields.name == "[memory]" && (fields.ph == "i" || fields.ph == "I") && fields.ts_ns.has_value();
}

class MemoryEventImporter {
 public:
  // Adds the memory event `fields` (is_memory_event; raw text `text`,
  // `padded_size` bytes allocated from its start; `pid` resolved by the
  // importer) when it is of an accelerator. Device type 0 (the host's
  // allocator) and 14 (meta tensors, which hold no memory) are left out.
  void add(const EventFields& fields, int64_t pid, std::string_view text, size_t padded_size, Run& run);

  // "[memory]" events left out because their args were not readable
  // numbers (or the text not parseable a second time): for the warnings.
  size_t skipped() const { return skipped_; }

 private:
  struct Totals {
    std::optional<int64_t> device_type, device;
    std::optional<double> allocated, reserved;
  };
  bool read_totals(std::string_view text, size_t padded_size, Totals& totals);
  CounterTrackId track(Run& run, int64_t pid, int64_t device, std::string_view quantity);

  simdjson::ondemand::parser parser_;
  std::map<std::tuple<int64_t, int64_t, std::string_view>, CounterTrackId> tracks_;
  size_t skipped_ = 0;
};

}  // namespace stepscope
