#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>

#include "analyses/process_summary.hpp"
#include "analyses/profile.hpp"
#include "analyses/spans/span_census.hpp"
#include "analyses/spans/span_index.hpp"

namespace stepscope {
namespace {

// Random spans on a few tracks, in runs on one track as traces write them.
stepscope::Run random_run(std::mt19937& random) {
  stepscope::Run run;
  run.add_process(1, "host");
  run.add_process(2, "device");
  for (int i = 0; i < 3000;) {
    int64_t pid = std::uniform_int_distribution<int>(1, 3)(random);  // pid 3: no process
    int64_t tid = std::uniform_int_distribution<int>(1, 4)(random);
    for (int run_length = std::uniform_int_distribution<int>(1, 40)(random); run_length > 0; --run_length, ++i) {
      auto kind = static_cast<SpanKind>(std::uniform_int_distribution<int>(0, kSpanKindCount - 1)(random));
      run.spans.push_back({.start_ns = i, .end_ns = i + 5, .pid = pid, .tid = tid, .kind = kind});
    }
  }
  return run;
}

TEST(SpanCensus, CountsTracksKindsAndListsRareKindsInTraceOrder) {
  std::mt19937 random(3);
  stepscope::Run run = random_run(random);
  SpanCensus census(run);
  std::map<std::pair<int64_t, int64_t>, std::tuple<size_t, size_t, size_t>> expected;  // spans, device, other
  std::map<SpanKind, std::vector<SpanId>> of_kind;
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& s = run.spans[i];
    auto& [spans, device, other] = expected[{s.pid, s.tid}];
    ++spans;
    device += runs_on_device(s.kind);
    other += s.kind == SpanKind::kOther;
    of_kind[s.kind].push_back(i);
  }
  ASSERT_EQ(census.tracks().size(), expected.size());
  for (const CensusTrack& track : census.tracks()) {
    auto [spans, device, other] = expected.at({track.pid, track.tid});
    EXPECT_EQ(track.spans, spans);
    EXPECT_EQ(track.device, device);
    EXPECT_EQ(track.other, other);
  }
  for (int k = 0; k < kSpanKindCount; ++k) {
    auto kind = static_cast<SpanKind>(k);
    EXPECT_EQ(census.count(kind), of_kind[kind].size());
    bool rare = kind == SpanKind::kStep || kind == SpanKind::kDataWait || kind == SpanKind::kForward ||
                kind == SpanKind::kBackward || kind == SpanKind::kOptimizer || kind == SpanKind::kOther;
    EXPECT_EQ(census.ids(kind), rare ? of_kind[kind] : std::vector<SpanId>{}) << span_kind_name(kind);
  }
}

// The host span index makes the same census in its own first pass, which
// the process summary then reads instead of passing over the spans.
TEST(SpanCensus, TheIndexsCensusGivesTheSameProcessSummary) {
  std::mt19937 random(5);
  stepscope::Run run = random_run(random);
  HostSpansByThread index(run);
  std::vector<ProcessSummary> own = summarize_processes(run);
  std::vector<ProcessSummary> shared = summarize_processes(run, index.census());
  ASSERT_EQ(own.size(), 2u);
  ASSERT_EQ(shared.size(), 2u);
  for (size_t p = 0; p < own.size(); ++p) {
    EXPECT_EQ(shared[p].spans, own[p].spans);
    EXPECT_EQ(shared[p].threads, own[p].threads);
    EXPECT_EQ(shared[p].role, own[p].role);
  }
  size_t spans_of_1 = 0;
  for (const Span& s : run.spans) spans_of_1 += s.pid == 1;
  EXPECT_EQ(own[0].spans, spans_of_1);
  EXPECT_EQ(own[0].threads, 4u);
}

// kOther spans (a trace's bookkeeping, unknown categories) are in the host
// span index, but are no host work: a process of nothing else is a trace
// track in the summary, and its thread stays out of the span profile, both
// by the census's count; one cpu op beside them makes both a host's.
TEST(SpanCensus, KindOtherIsIndexedButIsNoHostWorkForTheSummaryNorTheProfile) {
  stepscope::Run run;
  run.metadata["source_format"] = "chrome_trace";
  run.add_process(1, "Spans");
  run.add_process(2, "python");
  StringId trace = run.strings.intern("PyTorch Profiler (0)");
  StringId op = run.strings.intern("aten::mm");
  run.spans.push_back({.start_ns = 0, .end_ns = 100, .pid = 1, .tid = 1, .kind = SpanKind::kOther, .name = trace});
  run.spans.push_back({.start_ns = 5, .end_ns = 8, .pid = 1, .tid = 1, .kind = SpanKind::kOther, .name = trace});
  run.spans.push_back({.start_ns = 0, .end_ns = 50, .pid = 2, .tid = 7, .kind = SpanKind::kOther, .name = trace});
  run.spans.push_back({.start_ns = 10, .end_ns = 20, .pid = 2, .tid = 7, .kind = SpanKind::kCpuOp, .name = op});
  run.spans.push_back({.start_ns = 10, .end_ns = 20, .pid = 2, .tid = 9, .kind = SpanKind::kKernel, .name = op});

  HostSpansByThread index(run);
  ASSERT_EQ(index.threads().size(), 2u);
  EXPECT_EQ(index.threads()[0].spans.size(), 2u);  // kOther is indexed
  EXPECT_EQ(index.threads()[0].host_work, 0u);
  EXPECT_EQ(index.threads()[1].spans.size(), 2u);
  EXPECT_EQ(index.threads()[1].host_work, 1u);
  for (const CensusTrack& track : index.census().tracks()) {
    size_t indexed = 0, work = 0;
    for (const Span& s : run.spans) {
      if (s.pid != track.pid || s.tid != track.tid) continue;
      indexed += is_host_span(s.kind);
      work += is_host_span(s.kind) && s.kind != SpanKind::kOther;
    }
    EXPECT_EQ(track.not_on_device(), indexed);
    EXPECT_EQ(track.host_work(), work);
  }

  std::vector<ProcessSummary> processes = summarize_processes(run, index.census());
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].role, ProcessRole::kTraceTrack);
  EXPECT_EQ(processes[1].role, ProcessRole::kHost);
  Profile profile = build_profile(run, {}, &index);
  ASSERT_EQ(profile.threads.size(), 1u);
  EXPECT_EQ(profile.threads[0].pid, 2);
  EXPECT_EQ(profile.threads[0].tid, 7);
  // The kOther range is profiled on a host thread: 50 ns, 10 of them the op's.
  EXPECT_EQ(profile.threads[0].total_ns(), 50);
}

}  // namespace
}  // namespace stepscope
