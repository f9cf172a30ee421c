// The first difference between two imported Runs, in words ("" when they are
// the same): spans, flows, processes, threads, counters, metadata, with
// strings compared by content. Used by the unit tests and the fuzz target to
// check that the importer's two event readers agree.
#pragma once

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "run/run.hpp"

namespace stepscope::test {

inline std::string span_difference(const Run& a, const Run& b, size_t i) {
  const Span& x = a.spans[i];
  const Span& y = b.spans[i];
  bool same = x.start_ns == y.start_ns && x.end_ns == y.end_ns && x.pid == y.pid && x.tid == y.tid &&
              x.kind == y.kind && a.strings.get(x.name) == b.strings.get(y.name) && x.correlation == y.correlation &&
              x.bytes == y.bytes && a.strings.get(x.detail) == b.strings.get(y.detail);
  if (same) return "";
  return fmt::format("span {}: [{}, {}] {}/{} {} '{}' c{} b{} '{}' vs [{}, {}] {}/{} {} '{}' c{} b{} '{}'", i,
                     x.start_ns, x.end_ns, x.pid, x.tid, static_cast<int>(x.kind), a.strings.get(x.name),
                     x.correlation, x.bytes, a.strings.get(x.detail), y.start_ns, y.end_ns, y.pid, y.tid,
                     static_cast<int>(y.kind), b.strings.get(y.name), y.correlation, y.bytes, b.strings.get(y.detail));
}

inline std::string run_difference(const Run& a, const Run& b) {
  if (a.spans.size() != b.spans.size()) return fmt::format("{} vs {} spans", a.spans.size(), b.spans.size());
  for (size_t i = 0; i < a.spans.size(); ++i) {
    if (std::string diff = span_difference(a, b, i); !diff.empty()) return diff;
  }
  if (a.flows.size() != b.flows.size()) return fmt::format("{} vs {} flows", a.flows.size(), b.flows.size());
  for (size_t i = 0; i < a.flows.size(); ++i) {
    const Flow& x = a.flows[i];
    const Flow& y = b.flows[i];
    if (x.from != y.from || x.to != y.to || a.strings.get(x.kind) != b.strings.get(y.kind)) {
      return fmt::format("flow {}: {}->{} vs {}->{}", i, x.from, x.to, y.from, y.to);
    }
  }
  if (a.processes.size() != b.processes.size()) return "processes differ in number";
  for (size_t i = 0; i < a.processes.size(); ++i) {
    if (a.processes[i].pid != b.processes[i].pid ||
        a.strings.get(a.processes[i].command) != b.strings.get(b.processes[i].command)) {
      return fmt::format("process {} differs", i);
    }
  }
  if (a.threads.size() != b.threads.size()) return "threads differ in number";
  for (size_t i = 0; i < a.threads.size(); ++i) {
    const Thread& x = a.threads[i];
    const Thread& y = b.threads[i];
    if (x.pid != y.pid || x.tid != y.tid || a.strings.get(x.name) != b.strings.get(y.name)) {
      return fmt::format("thread {} differs", i);
    }
  }
  if (a.counter_tracks.size() != b.counter_tracks.size()) return "counter tracks differ in number";
  for (size_t i = 0; i < a.counter_tracks.size(); ++i) {
    const CounterTrack& x = a.counter_tracks[i];
    const CounterTrack& y = b.counter_tracks[i];
    if (x.pid != y.pid || a.strings.get(x.name) != b.strings.get(y.name) ||
        a.strings.get(x.unit) != b.strings.get(y.unit)) {
      return fmt::format("counter track {} differs", i);
    }
  }
  if (a.counter_values.size() != b.counter_values.size()) return "counter values differ in number";
  for (size_t i = 0; i < a.counter_values.size(); ++i) {
    const CounterValue& x = a.counter_values[i];
    const CounterValue& y = b.counter_values[i];
    // Bit for bit: both readers must round the decimal text the same way.
    if (x.track != y.track || x.ts_ns != y.ts_ns || std::memcmp(&x.value, &y.value, sizeof x.value) != 0) {
      return fmt::format("counter value {}: {} vs {}", i, x.value, y.value);
    }
  }
  if (a.metadata != b.metadata) {
    for (const auto& [key, value] : a.metadata) {
      auto found = b.metadata.find(key);
      if (found == b.metadata.end()) return fmt::format("metadata {} only in the first", key);
      if (found->second != value) return fmt::format("metadata {}: '{}' vs '{}'", key, value, found->second);
    }
    return "metadata keys only in the second";
  }
  return "";
}

}  // namespace stepscope::test
