// Comparing the rows of two Runs field by field (ids as they are, strings
// by id): what the run file tests check a read, a window or a trimmed run
// against.
#pragma once

#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "run/run.hpp"

namespace stepscope::test {

inline auto fields(const Sample& s) { return std::tie(s.ts_ns, s.pid, s.tid, s.stack, s.state, s.holds_gil); }
inline auto fields(const Span& s) {
  return std::tie(s.start_ns, s.end_ns, s.pid, s.tid, s.kind, s.name, s.correlation, s.bytes, s.detail);
}
inline auto fields(const Flow& f) { return std::tie(f.from, f.to, f.kind); }
inline auto fields(const CounterTrack& t) { return std::tie(t.name, t.pid, t.unit); }
inline auto fields(const CounterValue& v) { return std::tie(v.track, v.ts_ns, v.value); }

template <typename Row>
void expect_same_rows(const std::vector<Row>& expected, const std::vector<Row>& actual, const char* table) {
  ASSERT_EQ(expected.size(), actual.size()) << table;
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(fields(expected[i]) == fields(actual[i])) << table << i;
}

// The rows the run file holds in bulk: samples, spans, flows, counter tracks and values.
inline void expect_same_data(const Run& expected, const Run& actual) {
  expect_same_rows(expected.samples, actual.samples, "samples");
  expect_same_rows(expected.spans, actual.spans, "spans");
  expect_same_rows(expected.flows, actual.flows, "flows");
  expect_same_rows(expected.counter_tracks, actual.counter_tracks, "counter_tracks");
  expect_same_rows(expected.counter_values, actual.counter_values, "counter_values");
}

}  // namespace stepscope::test
