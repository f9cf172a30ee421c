// libFuzzer target for the Chrome-trace importer: any input must import or
// throw InputError; anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug. The first byte picks a tiny read-buffer size
// so piece boundaries, refills and buffer growth are fuzzed too.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "importers/chrome_trace.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  stepscope::ChromeTraceOptions options;
  options.chunk_size = 1 + data[0] % 128;
  options.strict = (data[0] & 0x80) != 0;
  std::string_view json(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    stepscope::Run run = stepscope::import_chrome_trace_bytes(json, "fuzz.json", options);
    // Whatever was imported must be coherent.
    for (const stepscope::Span& span : run.spans) {
      if (span.end_ns < span.start_ns) __builtin_trap();
      (void)run.strings.get(span.name);
    }
    for (const stepscope::Flow& flow : run.flows) {
      if (flow.from >= run.spans.size() || flow.to >= run.spans.size()) __builtin_trap();
    }
  } catch (const stepscope::InputError&) {
  }
  return 0;
}
