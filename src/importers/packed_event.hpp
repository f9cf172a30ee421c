// One piece of a trace (a header field or an event) as the importer's reading
// thread hands it to the importer's own thread (trace_event_pipeline.hpp):
// packed into two cache lines, with every string of a read event kept as an
// offset and a length within the event's text (which stays in its buffer
// until the batch is done), where EventFields and EventArgs take about five
// lines of views and a vector. The handover's cost is the cache lines one
// core writes and the other then reads (bench/README.md, "Trace import"), so
// the consumer unpacks a piece into fields of its own, in its own cache.
//
// A span's line (the first) holds what every complete event needs: its
// text, timestamps, track and name and category.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "importers/trace_event_fields.hpp"

namespace stepscope {

// A string within an event's text.
struct TextRef {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct alignas(64) PackedPiece {
  enum Flags : uint8_t {
    kEvent = 1,      // an event (else a header field)
    kRead = 2,       // an event the reading thread read: the fields below hold it
    kHasTs = 4,
    kHasDur = 8,
    kPidIsText = 16,  // pid holds a TextRef (see track_text)
    kTidIsText = 32,
    kNumbers = 64,    // a counter event's numbers (see correlation)
  };

  // The first line.
  const char* text = nullptr;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  TextRef name, cat, ph;
  // The second line.
  uint64_t event_index = 0;  // of a header field: its key's index in the batch
  // Of a complete event: its "correlation" and "bytes" args. Of a counter
  // event: where its numbers begin in the batch, and how many. Of a piece
  // that was not read: correlation holds the text's size.
  int64_t correlation = 0;
  int64_t bytes = 0;
  TextRef bp, flow_id, input_shapes, args_name;
  uint32_t text_size = 0;  // of a read event (at most 4 GiB, or it is not packed read)
  uint8_t flags = 0;

  bool is_event() const { return (flags & kEvent) != 0; }
  bool is_read() const { return (flags & kRead) != 0; }
  size_t size() const { return is_read() ? text_size : static_cast<size_t>(correlation); }
  std::string_view text_view() const { return {text, size()}; }
};
static_assert(sizeof(PackedPiece) == 128, "two cache lines");

using CounterNumbers = std::vector<std::pair<std::string_view, double>>;

// A header field or an event that was not read.
PackedPiece pack_unread(std::string_view text, bool is_event, uint64_t index);

// Packs an event that `fields` and `args` hold (as PlainEventReader filled
// them: every view within `text`); its counter numbers are appended to
// `numbers`. False, with nothing appended and `packed` unspecified, when it
// cannot be packed (a view outside the text, a text over 4 GiB): the piece
// then goes unread.
bool pack_read_event(std::string_view text, uint64_t event_index, const EventFields& fields, const EventArgs& args,
                     PackedPiece& packed, CounterNumbers& numbers);

// The fields and args of a read event, as they were packed; `args`'s vector
// keeps its buffer.
void unpack_read_event(const PackedPiece& packed, const CounterNumbers& numbers, EventFields& fields, EventArgs& args);

}  // namespace stepscope
