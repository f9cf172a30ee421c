// compare_runs on hand-made steps: figures against independent arithmetic,
// warm-up and unequal step counts, verdicts and gating, bad input; steps
// from traces; the sections; and the renderers' escaping.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <numeric>
#include <sstream>

#include "analyses/compare/compare.hpp"
#include "analyses/compare/sections.hpp"
#include "analyses/compare/steps.hpp"
#include "renderers/compare/json.hpp"
#include "renderers/compare/markdown.hpp"
#include "renderers/compare/text.hpp"
#include "run_fixtures.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

constexpr int64_t kMs = 1'000'000;

// Steps of the given times (ms), back to back, 32 samples each, the first
// `warmup` flagged as warm-up; a host peak of `peak_mib` MiB.
CompareSide side(const std::vector<double>& times_ms, size_t warmup = 0, int64_t peak_mib = 100) {
  CompareSide s;
  s.label = "run";
  s.origin = "hooks";
  s.has_phases = true;
  int64_t t = 0;
  for (size_t i = 0; i < times_ms.size(); ++i) {
    StepRecord& r = s.steps.emplace_back();
    r.start_ns = t;
    t += static_cast<int64_t>(times_ms[i] * kMs);
    r.end_ns = t;
    r.samples = 32;
    r.host_peak_bytes = peak_mib << 20;
    r.phase_ns[static_cast<size_t>(StepPhase::kForward)] = r.time_ns() / 4;
    r.phase_ns[static_cast<size_t>(StepPhase::kOther)] = r.time_ns() - r.time_ns() / 4;
    r.warmup = i < warmup;
  }
  return s;
}

// Noisy step times around `mean_ms` (a fixed pattern, +-5%).
std::vector<double> times(size_t n, double mean_ms) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(mean_ms * (1 + 0.05 * (static_cast<double>((i * 7) % 11) / 5.0 - 1)));
  return out;
}

const MetricComparison& metric(const CompareResult& r, const std::string& name) {
  for (const auto* list : {&r.metrics, &r.phases}) {
    for (const MetricComparison& m : *list) {
      if (m.name == name) return m;
    }
  }
  throw std::runtime_error("no metric " + name);
}

double mean(const std::vector<double>& v, size_t skip) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(skip), v.end(), 0.0) /
         static_cast<double>(v.size() - skip);
}

TEST(Compare, FiguresOverSteadyStepsAgainstArithmetic) {
  std::vector<double> base = times(30, 20), cur = times(45, 26);
  CompareResult r = compare_runs(side(base, 3), side(cur, 4), {});
  EXPECT_EQ(r.base_skipped, 3u);
  EXPECT_EQ(r.cur_skipped, 4u);
  const MetricComparison& t = metric(r, "step_time");
  EXPECT_NEAR(t.base, mean(base, 3), 1e-6);
  EXPECT_NEAR(t.cur, mean(cur, 4), 1e-6);
  EXPECT_NEAR(t.change.estimate, mean(cur, 4) / mean(base, 3) - 1, 1e-9);
  EXPECT_EQ(t.base_steps, 27u);
  EXPECT_EQ(t.cur_steps, 41u);
  EXPECT_EQ(t.verdict, Verdict::kRegressed);
  const MetricComparison& rate = metric(r, "samples_per_sec");
  EXPECT_NEAR(rate.base, 32.0 * 27 / (mean(base, 3) * 27 / 1000), 1e-6);
  EXPECT_TRUE(rate.higher_is_better);
  EXPECT_EQ(rate.verdict, Verdict::kRegressed);
  EXPECT_NEAR(metric(r, "forward").base, mean(base, 3) / 4, 1e-3);
  EXPECT_TRUE(r.regressed());
}

TEST(Compare, SameStepsNoRegression) {
  CompareResult r = compare_runs(side(times(30, 20), 3), side(times(30, 20), 3), {});
  EXPECT_EQ(metric(r, "step_time").verdict, Verdict::kNoSignificantChange);
  EXPECT_FALSE(r.regressed());
}

TEST(Compare, PhasesWithoutABaseAreNotedNotCompared) {
  CompareSide base = side(times(10, 20)), cur = side(times(10, 20));
  for (StepRecord& r : cur.steps) r.phase_ns[static_cast<size_t>(StepPhase::kDataWait)] = 2 * kMs;
  CompareResult r = compare_runs(base, cur, {});
  for (const MetricComparison& m : r.phases) {
    EXPECT_NE(m.name, "data_wait");
    EXPECT_NE(m.name, "backward");  // neither run has it
  }
  EXPECT_NO_THROW(metric(r, "forward"));
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("data_wait: 0 ms in BASE, 2.000 ms in CUR"), std::string::npos) << r.notes.front();
}

TEST(Compare, SkipOverridesTheWarmupFlags) {
  std::vector<double> base = times(20, 20);
  base[0] = base[1] = 500;  // slow start
  CompareOptions options;
  options.skip = 2;
  CompareResult r = compare_runs(side(base, 0), side(times(20, 20), 0), options);
  EXPECT_NEAR(metric(r, "step_time").base, mean(base, 2), 1e-6);
  EXPECT_FALSE(r.regressed());
}

TEST(Compare, OnlyGatingMetricsDecide) {
  CompareOptions options;
  options.gating_metrics = {"peak_memory"};
  CompareResult r = compare_runs(side(times(30, 20)), side(times(30, 26)), options);
  EXPECT_EQ(metric(r, "step_time").verdict, Verdict::kRegressed);
  EXPECT_FALSE(metric(r, "step_time").gating);
  EXPECT_FALSE(r.regressed());
  // Memory: 10% more, no interval, beyond the threshold.
  CompareResult m = compare_runs(side(times(30, 20), 0, 100), side(times(30, 20), 0, 110), options);
  EXPECT_EQ(metric(m, "peak_memory").verdict, Verdict::kRegressed);
  EXPECT_FALSE(metric(m, "peak_memory").p_value.has_value());
  EXPECT_TRUE(m.regressed());
}

TEST(Compare, BadInputSaysWhat) {
  EXPECT_THROW(compare_runs(side({20}), side(times(10, 20)), {}), InputError);
  CompareOptions options;
  options.skip = 9;
  EXPECT_THROW(compare_runs(side(times(10, 20)), side(times(10, 20)), options), InputError);
  options = {};
  options.gating_metrics = {"nonsense"};
  EXPECT_THROW(compare_runs(side(times(10, 20)), side(times(10, 20)), options), InputError);
  options.gating_metrics = {"peak_device_memory"};  // not in these steps
  try {
    compare_runs(side(times(10, 20)), side(times(10, 20)), options);
    FAIL() << "no error for a missing metric";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("peak_device_memory"), std::string::npos);
  }
}

TEST(CompareSteps, ProfilerStepSpansOfATrace) {
  stepscope::Run run;
  auto span = [&](SpanKind kind, const char* name, int64_t start_ms, int64_t end_ms, int64_t pid = 1) {
    run.spans.push_back({start_ms * kMs, end_ms * kMs, pid, pid, kind, run.strings.intern(name)});
  };
  span(SpanKind::kUserRange, "ProfilerStep#12", 30, 45);  // out of order
  span(SpanKind::kUserRange, "ProfilerStep#10", 0, 10);
  span(SpanKind::kCpuOp, "ProfilerStep#11", 10, 30);
  span(SpanKind::kDeviceAnnotation, "ProfilerStep#11", 12, 31);  // the device mirror: not a step
  span(SpanKind::kCpuOp, "ProfilerStep#x", 50, 60);              // not a step number
  span(SpanKind::kCpuOp, "aten::mm", 1, 2);
  span(SpanKind::kUserRange, "ProfilerStep#1", 0, 5, 2);  // another process with fewer steps
  RunSteps steps = run_steps(run);
  EXPECT_EQ(steps.origin, "ProfilerStep spans");
  EXPECT_EQ(steps.pid, 1);
  EXPECT_FALSE(steps.has_phases);
  ASSERT_EQ(steps.steps.size(), 3u);
  EXPECT_EQ(steps.steps[0].time_ns(), 10 * kMs);
  EXPECT_EQ(steps.steps[1].time_ns(), 20 * kMs);
  EXPECT_EQ(steps.steps[2].time_ns(), 15 * kMs);
  EXPECT_TRUE(steps.steps[0].warmup);
  EXPECT_FALSE(steps.steps[1].warmup);
}

TEST(CompareSteps, HookStepsComeFirst) {
  stepscope::Run run = fixtures::span_run();
  RunSteps steps = run_steps(run);
  EXPECT_EQ(steps.origin, "hooks");
  EXPECT_EQ(steps.steps.size(), 2u);
  EXPECT_TRUE(run_steps(stepscope::Run{}).steps.empty());
}

TEST(CompareSections, LargestDifferencesFirst) {
  std::vector<DiffRow> rows = top_differences({{"a", 1}, {"b", 5}, {"c", 2}}, {{"a", 1.5}, {"b", 1}, {"d", 3}}, 3);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "b");  // -4
  EXPECT_EQ(rows[1].name, "d");  // +3 (absent in base)
  EXPECT_EQ(rows[2].name, "c");  // -2 (absent in cur)
  EXPECT_EQ(rows[2].cur, 0);
}

TEST(CompareSections, OperatorsAndKernelsPerStep) {
  stepscope::Run base = fixtures::span_run(), cur = fixtures::span_run();
  const int64_t second = 1'000'000'000;  // the fixture's steps start at 1 s and last 1 ms each
  // Base: both steps; cur: only the second (the first is warm-up), so the
  // kernel (starting at 1 s) and the first step's operator are outside.
  std::vector<DiffTable> tables =
      compare_sections(base, {second, second + 2 * kMs, 2}, cur, {second + kMs, second + 2 * kMs, 1}, 10);
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[0].key, "functions");
  EXPECT_EQ(tables[1].key, "ops");
  EXPECT_EQ(tables[2].key, "kernels");
  // The one kernel lasts 5 ms: 2.5 ms per step over 2 steps; it starts before cur's window.
  ASSERT_EQ(tables[2].rows.size(), 1u);
  EXPECT_DOUBLE_EQ(tables[2].rows[0].base, 2.5);
  EXPECT_DOUBLE_EQ(tables[2].rows[0].cur, 0);
  // aten::mm (100 us, in step 1) and "tiny" (400 ns, in step 2).
  std::map<std::string, DiffRow> ops;
  for (const DiffRow& row : tables[1].rows) ops[row.name] = row;
  EXPECT_DOUBLE_EQ(ops.at("aten::mm <&> \xff").base, 0.05);
  EXPECT_DOUBLE_EQ(ops.at("aten::mm <&> \xff").cur, 0);
  EXPECT_DOUBLE_EQ(ops.at("tiny").base, 0.0002);
  EXPECT_DOUBLE_EQ(ops.at("tiny").cur, 0.0004);
}

CompareResult hostile_result() {
  CompareSide base = side(times(10, 20)), cur = side(times(10, 30));
  base.label = fixtures::kHostileCommand;
  cur.label = "cur|`*_[x](http://e)";
  CompareResult r = compare_runs(base, cur, {});
  r.sections.push_back({"functions", "Top functions", "ms/step", {{fixtures::kScriptName, 1, 2}, {"a|b\nc", 3, 1}}});
  return r;
}

TEST(CompareRenderers, JsonIsValidAndVersioned) {
  std::ostringstream out;
  write_compare_json(hostile_result(), out);
  std::string text = out.str();
  EXPECT_TRUE(fixtures::valid_utf8(text));
  EXPECT_EQ(text.find("<script>"), std::string::npos);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  EXPECT_EQ(std::string_view(doc["format"]), "stepscope.compare/1");
  EXPECT_TRUE(bool(doc["regressed"]));
  EXPECT_EQ(std::string_view(doc["metrics"].at(0)["verdict"]), "regressed");
  EXPECT_EQ(std::string_view(doc["sections"].at(0)["rows"].at(0)["name"]), fixtures::kScriptName);
}

TEST(CompareRenderers, MarkdownNamesCannotBreakTheTable) {
  std::ostringstream out;
  write_compare_markdown(hostile_result(), out);
  std::string text = out.str();
  EXPECT_TRUE(fixtures::valid_utf8(text));
  EXPECT_EQ(text.find("<script>"), std::string::npos);
  EXPECT_NE(text.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(text.find("a\\|b\\\\x0Ac"), std::string::npos);  // pipe and backslash escaped, newline visible
  EXPECT_EQ(markdown_text("x*y_[z]`|~"), "x\\*y\\_\\[z\\]\\`\\|\\~");
  // Every table row has as many cells as its header.
  for (const std::string& line : fixtures::split(text, '\n')) {
    if (line.rfind("| step", 0) == 0) {
      EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 8) << line;
    }
  }
}

TEST(CompareRenderers, TextSaysTheOutcome) {
  std::ostringstream out;
  write_compare_text(hostile_result(), out);
  EXPECT_NE(out.str().find("Result: REGRESSION: step_time"), std::string::npos);
  EXPECT_TRUE(fixtures::valid_utf8(out.str()));
}

}  // namespace
}  // namespace stepscope
