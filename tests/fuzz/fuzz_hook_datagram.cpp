// libFuzzer target for the datagrams the recorded program's hooks send
// (collectors/hooks/events.hpp): they come from another process, so any
// bytes must decode to records within their bounds or be refused, and what
// decodes must go into a Run that stays coherent. A crash, a sanitizer
// report or a broken bound is a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/hooks/events.hpp"

namespace {

constexpr int64_t kMostSpanNs = 7LL * 24 * 3600 * 1'000'000'000;

bool valid_interval(int64_t tid, int64_t start, int64_t end) {
  return tid > 0 && start > 0 && end >= start && end - start <= kMostSpanNs;
}

void check_decoded(const stepscope::HookDatagram& datagram) {
  for (const stepscope::HookSpanEvent& span : datagram.spans) {
    if (!valid_interval(span.tid, span.start_ns, span.end_ns) || span.name.size() > 1024) __builtin_trap();
  }
  for (const stepscope::HookPlace& place : datagram.places) {
    if (!valid_interval(place.tid, place.start_ns, place.end_ns)) __builtin_trap();
  }
}

void check_run(const stepscope::Run& run) {
  for (const stepscope::Span& span : run.spans) {
    if (span.end_ns < span.start_ns || span.end_ns - span.start_ns > kMostSpanNs) __builtin_trap();
    (void)run.strings.get(span.name);
  }
  for (const stepscope::CounterValue& value : run.counter_values) {
    if (value.track >= run.counter_tracks.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::optional<stepscope::HookDatagram> datagram = stepscope::decode_hook_datagram(bytes);
  if (datagram.has_value() != stepscope::decode_hook_datagram(bytes).has_value()) __builtin_trap();
  stepscope::Run run;
  stepscope::HookRunBuilder builder;
  if (!datagram) {
    builder.add_bad_datagram(run);
    return 0;
  }
  check_decoded(*datagram);
  builder.add(run, *datagram);
  builder.add(run, *datagram);  // the same records again: tracks and totals found, not made twice
  builder.finish(run);
  check_run(run);
  return 0;
}
