#include <gtest/gtest.h>

#include "analyses/spans/span_index.hpp"

namespace stepscope {
namespace {

std::vector<SpanId> ids(std::span<const HostSpan> spans) {
  std::vector<SpanId> out;
  for (const HostSpan& span : spans) out.push_back(span.id);
  return out;
}

TEST(HostSpansByThread, ThreadsByPidTidSpansByStartLongestFirstThenTraceOrder) {
  stepscope::Run run;
  run.spans.push_back({10, 20, 2, 5, SpanKind::kCpuOp});       // 0
  run.spans.push_back({0, 50, 1, 9, SpanKind::kCpuOp});        // 1
  run.spans.push_back({5, 8, 1, 9, SpanKind::kKernel});        // 2: device activity, left out
  run.spans.push_back({0, 60, 1, 9, SpanKind::kUserRange});    // 3: starts with 1, longer
  run.spans.push_back({0, 50, 1, 9, SpanKind::kRuntimeCall});  // 4: same times as 1, after it
  run.spans.push_back({3, 4, 1, 7, SpanKind::kStep});          // 5

  HostSpansByThread index(run);
  ASSERT_EQ(index.threads().size(), 3u);
  EXPECT_EQ(index.threads()[0].tid, 7);
  EXPECT_EQ(index.threads()[1].tid, 9);
  EXPECT_EQ(index.threads()[2].pid, 2);
  EXPECT_EQ(ids(index.threads()[0].spans), std::vector<SpanId>({5}));
  EXPECT_EQ(ids(index.threads()[1].spans), std::vector<SpanId>({3, 1, 4}));
  EXPECT_EQ(ids(index.threads()[2].spans), std::vector<SpanId>({0}));
  // Each entry carries its span's times; all() is every thread's, in order.
  for (const HostSpan& span : index.all()) {
    EXPECT_EQ(span.start_ns, run.spans[span.id].start_ns);
    EXPECT_EQ(span.end_ns, run.spans[span.id].end_ns);
  }
  EXPECT_EQ(ids(index.all()), std::vector<SpanId>({5, 3, 1, 4, 0}));
}

TEST(HostSpansByThread, EmptyRunHasNoThreads) {
  stepscope::Run run;
  EXPECT_TRUE(HostSpansByThread(run).threads().empty());
}

}  // namespace
}  // namespace stepscope
