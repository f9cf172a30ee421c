// A hand-written reader of one Chrome trace event in the plain form that
// profilers write: ASCII text, no escapes in the strings it reads, numbers
// and literals in their usual forms. It fills the same EventFields/EventArgs
// as ChromeTraceEventReader's simdjson path, several times faster (no
// structural index, one pass, no copies), and declines (returns 0) anything
// else: invalid or unusual JSON, bytes outside printable ASCII, escapes where
// it would have to decode them, types the importer would warn about or
// refuse. Declined events go the simdjson way, so errors, repairs and
// warnings stay what they were.
//
// The contract that keeps imports identical: what this reader accepts,
// simdjson On-Demand accepts too and reads to the same fields. The fuzz
// target checks it by importing every input both ways.
#pragma once

#include <cstddef>
#include <cstdint>

#include "importers/trace_event_fields.hpp"

namespace stepscope {

// Problems tolerated in an accepted event, to be added to EventReadCounts.
struct PlainEventCounts {
  size_t bad_span_args = 0;  // correlation/bytes that are negative integers
};

class PlainEventReader {
 public:
  // Bytes the reader may load past the end of the data it is given (they
  // must be allocated; their value does not matter).
  static constexpr size_t kReadAhead = 16;

  // Reads the event that starts at data[0] ('{') and ends within `available`
  // bytes. Returns its length through the closing '}', with `fields`
  // overwritten whole and `args` (which must be clear on entry) and `counts`
  // filled; 0 when it declines (the outputs are then unspecified).
  // kReadAhead bytes after data + available must be readable.
  size_t read(const char* data, size_t available, EventFields& fields, EventArgs& args, PlainEventCounts& counts);
};

}  // namespace stepscope
