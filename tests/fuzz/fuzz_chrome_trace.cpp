// libFuzzer target for the Chrome-trace importer: any input must import or
// throw InputError; anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug. The first byte picks a tiny read-buffer size
// so piece boundaries, refills and buffer growth are fuzzed too. Every input
// is imported three times: on one thread with the hand-written reader of
// plain events, on one thread with simdjson alone, and on two threads (the
// reading thread of trace_event_pipeline.hpp): all must give the same Run or
// the same error.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "../unit/run_difference.hpp"
#include "importers/chrome_trace.hpp"
#include "util/error.hpp"

namespace {

// The import's error message, "" when it imports; the Run in `run`.
std::string import(std::string_view json, const stepscope::ChromeTraceOptions& options, stepscope::Run& run) {
  try {
    run = stepscope::import_chrome_trace_bytes(json, "fuzz.json", options);
  } catch (const stepscope::InputError& error) {
    return error.what();
  }
  return "";
}

// Imports `json` the other way `how` says and traps unless it gives
// `error` and `run` again.
void check_same_import(std::string_view json, const stepscope::ChromeTraceOptions& how, const std::string& error,
                       const stepscope::Run& run, const char* what) {
  stepscope::Run reference;
  std::string reference_error = import(json, how, reference);
  std::string difference = error != reference_error ? "errors: '" + error + "' vs '" + reference_error + "'"
                           : error.empty()          ? stepscope::test::run_difference(run, reference)
                                                    : "";
  if (difference.empty()) return;
  std::fprintf(stderr, "%s disagree: %s\n", what, difference.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  stepscope::ChromeTraceOptions options;
  options.chunk_size = 1 + data[0] % 128;
  options.strict = (data[0] & 0x80) != 0;
  options.threads = stepscope::ImportThreads::kOne;
  std::string_view json(reinterpret_cast<const char*>(data + 1), size - 1);
  stepscope::Run imported;
  std::string error = import(json, options, imported);
  stepscope::ChromeTraceOptions simdjson_only = options;
  simdjson_only.plain_event_reader = false;
  check_same_import(json, simdjson_only, error, imported, "plain reader and simdjson");
  stepscope::ChromeTraceOptions two_threads = options;
  two_threads.threads = stepscope::ImportThreads::kTwo;
  check_same_import(json, two_threads, error, imported, "one thread and two");
  if (error.empty()) {
    const stepscope::Run& run = imported;
    // Whatever was imported must be coherent.
    for (const stepscope::Span& span : run.spans) {
      if (span.end_ns < span.start_ns) __builtin_trap();
      (void)run.strings.get(span.name);
    }
    for (const stepscope::Flow& flow : run.flows) {
      if (flow.from >= run.spans.size() || flow.to >= run.spans.size()) __builtin_trap();
    }
  }
  return 0;
}
