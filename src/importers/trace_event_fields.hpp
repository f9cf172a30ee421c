// The fields of one Chrome trace event that the importer uses, as the event
// readers (PlainEventReader, ChromeTraceEventReader) fill them in.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace stepscope {

// A pid or tid as the trace wrote it: a number, or a string to be mapped.
struct TrackIdField {
  bool is_text = false;
  int64_t number = 0;
  std::string_view text;
};

// The fields of one event that the importer uses. Views are valid until the
// next event is read.
struct EventFields {
  std::string_view ph, name, cat, bp, flow_id;
  TrackIdField pid, tid;
  std::optional<int64_t> ts_ns, dur_ns;
};

// What the importer keeps of an event's args.
struct EventArgs {
  std::string_view name;  // args.name of M events
  std::vector<std::pair<std::string_view, double>> numbers;  // numeric args of C events
  // Of complete events: Kineto's launch/activity pairing, a copy's size and
  // an op's input shapes (raw JSON text).
  int64_t correlation = 0;
  int64_t bytes = 0;
  std::string_view input_shapes;

  // Keeps the vector's buffer for the next event. Each view is cleared on
  // its own: `name = input_shapes = {}` copied one just written through a
  // 16-byte load that stalled on store forwarding (perf: 2% of the import).
  void clear() {
    name = {};
    input_shapes = {};
    numbers.clear();
    correlation = bytes = 0;
  }
};

}  // namespace stepscope
