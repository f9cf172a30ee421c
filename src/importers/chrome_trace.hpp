// Importer for Chrome trace-event JSON, the format torch.profiler (Kineto)
// and the legacy autograd profiler write: a trace becomes a Run in memory.
// The input streams through a buffer of a few MB (gzip inflated on the way),
// so memory is what the Run needs, not the size of the file; see
// docs/import.md.
//
// What the Run gets:
//  * spans from "X" complete events and matched "B"/"E" pairs; complete
//    events' args give Span::correlation ("correlation"), Span::bytes
//    ("bytes") and Span::detail (input shapes, "Input Dims" as JSON text);
//  * processes and threads (names from "M" process_name/thread_name events;
//    a string pid or tid, as Kineto writes for "Spans"/"Traces", becomes a
//    synthetic id below kSyntheticIdBase and keeps the string as its name);
//  * counter tracks/values from "C" events, one track per (pid, name.arg);
//  * flows from "s"/"f" pairs bound to the slices that enclose them;
//  * metadata: the header's scalar fields, "deviceProperties" and
//    "distributedInfo" as JSON text, "clock" = "trace", "source",
//    "source_format" = "chrome_trace", "instant_events" (a count, instants are
//    not kept) and "import_warnings" (one line per kind of problem tolerated).
//
// Timestamps are microseconds in the trace and become int64 nanoseconds,
// converted from the decimal text (not via double) so nanosecond-resolution
// traces keep every digit. No offset is applied: a "baseTimeNanoseconds"
// header stays in metadata for whoever needs wall-clock time.
//
// Malformed input throws InputError naming the source and the event's index
// in traceEvents (0-based) or the byte offset (in the decompressed input) of
// a JSON syntax error. With `strict`, tolerated problems throw too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "importers/chrome_category.hpp"
#include "run/run.hpp"
#include "util/byte_stream.hpp"

namespace stepscope {

// Synthetic ids for string pids/tids count down from here, far below any
// real (or Kineto's -1 style sentinel) id.
inline constexpr int64_t kSyntheticIdBase = -(int64_t{1} << 48);
// Whether a pid or tid stands for a string of the trace (its name holds it).
inline constexpr bool is_synthetic_id(int64_t id) { return id <= kSyntheticIdBase; }

// Who reads the input: this thread alone, or a second thread that reads,
// splits and parses events while this one builds the Run
// (trace_event_pipeline.hpp). Both give the same Run, warnings and errors.
enum class ImportThreads {
  kAuto,  // two for inputs large enough to gain, on a machine with two or more cores
  kOne,
  kTwo,
};

struct ChromeTraceOptions {
  // Every warning (skipped events, repaired text, ...) becomes an InputError.
  bool strict = false;
  // The size of the reused read buffer (it grows only for a larger event).
  size_t chunk_size = size_t{4} << 20;
  // Off: every event is read by simdjson, none by the hand-written reader
  // of plain events (tests compare the two ways).
  bool plain_event_reader = true;
  ImportThreads threads = ImportThreads::kAuto;
  // Off: flow events are checked as any event but neither kept nor bound to
  // their slices (Run::flows stays empty, and the binding's warnings are not
  // looked for), for callers whose analyses read no flows.
  bool flows = true;
};

// Reads `path` (gzip or plain) and imports it.
Run import_chrome_trace(const std::string& path, const ChromeTraceOptions& options = {});

// Imports JSON text already in memory; `source_name` names it in metadata
// "source" and in error messages.
Run import_chrome_trace_bytes(std::string_view json, const std::string& source_name,
                              const ChromeTraceOptions& options = {});

// Imports whatever `input` yields.
Run import_chrome_trace_stream(ByteStream& input, const ChromeTraceOptions& options = {});

}  // namespace stepscope
