#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "run/span_block.hpp"

namespace stepscope {
namespace {

void expect_same_spans(const std::vector<Span>& a, const std::vector<Span>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a[i].start_ns, b[i].start_ns);
    EXPECT_EQ(a[i].end_ns, b[i].end_ns);
    EXPECT_EQ(a[i].pid, b[i].pid);
    EXPECT_EQ(a[i].tid, b[i].tid);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].correlation, b[i].correlation);
    EXPECT_EQ(a[i].bytes, b[i].bytes);
    EXPECT_EQ(a[i].detail, b[i].detail);
  }
}

std::vector<Span> round_trip(const std::vector<Span>& spans, size_t strings) {
  std::vector<Span> decoded;
  EXPECT_EQ(decode_span_block(encode_span_block(spans), spans.size(), strings, decoded), "");
  return decoded;
}

TEST(SpanBlock, EverySpanSurvivesExactly) {
  using Int = std::numeric_limits<int64_t>;
  std::vector<Span> spans = {
      {100, 200, 7, 7, SpanKind::kStep, 1, 0, 0, 0},
      // An imported trace's odd spans: ending before they start, times and ids at the limits.
      {500, 400, 7, 9, SpanKind::kKernel, 2, Int::max(), Int::min(), 3},
      {Int::min(), Int::max(), Int::max(), Int::min(), SpanKind::kDeviceAnnotation, 3, Int::min(), Int::max(), 0},
      {Int::max(), Int::min(), -1, 0, SpanKind::kOther, 0, -5, -1, 3},
  };
  for (int kind = 0; kind < kSpanKindCount; ++kind) {
    spans.push_back({kind * 10, kind * 10 + 5, 3, 4, static_cast<SpanKind>(kind), 1, kind, kind * 4096, 2});
  }
  expect_same_spans(spans, round_trip(spans, 4));
  EXPECT_TRUE(round_trip({}, 1).empty());
}

// What a recording writes: a step's phases, each written as it ends (so
// starts come out of order), for four processes.
TEST(SpanBlock, ARecordingsStepsTakeAFewBytesASpan) {
  std::vector<Span> spans;
  for (int64_t step = 0; step < 200; ++step) {
    for (int64_t pid = 100; pid < 104; ++pid) {
      int64_t start = step * 50'000'000 + pid * 1'000 + (step * 7919 % 1000);
      int64_t data = start + 2'000'000, forward = data + 11'000'000, backward = forward + 20'000'000;
      spans.push_back({start, data, pid, pid, SpanKind::kDataWait, 1});
      spans.push_back({data, forward, pid, pid, SpanKind::kForward, 2});
      spans.push_back({forward, backward, pid, pid, SpanKind::kBackward, 3});
      spans.push_back({backward, backward + 4'000'000, pid, pid, SpanKind::kOptimizer, 4});
      spans.push_back({start, backward + 4'000'000, pid, pid, SpanKind::kStep, 5});
    }
  }
  std::string block = encode_span_block(spans);
  EXPECT_LT(block.size(), spans.size() * 8) << "bytes per span: " << double(block.size()) / double(spans.size());
  expect_same_spans(spans, round_trip(spans, 6));
}

TEST(SpanBlock, BadBytesAreRefusedAndLeaveTheVectorAlone) {
  std::vector<Span> spans = {{10, 20, 1, 1, SpanKind::kStep, 1, 0, 0, 2}, {15, 18, 1, 2, SpanKind::kForward, 1}};
  std::string good = encode_span_block(spans);
  std::vector<Span> bad_kind = spans;
  bad_kind[1].kind = static_cast<SpanKind>(200);
  struct Case {
    std::string data;
    size_t count;
    size_t strings;
    const char* expected;
  };
  for (const Case& c : {Case{"", 2, 4, "bad block header"}, Case{good, 30, 4, "bad block header"},
                        Case{good.substr(0, good.size() - 3), 2, 4, "corrupt compressed spans"},
                        Case{good, 1, 4, "spans do not fill the block"},
                        Case{good, 2, 2, "string 2 does not exist"},  // a detail
                        Case{good, 2, 1, "string 1 does not exist"},  // a name
                        Case{encode_span_block(bad_kind), 2, 4, "unknown span kind 200"}}) {
    std::vector<Span> out(1);
    EXPECT_EQ(decode_span_block(c.data, c.count, c.strings, out), c.expected) << c.count << " " << c.strings;
    EXPECT_EQ(out.size(), 1u);
  }
}

}  // namespace
}  // namespace stepscope
