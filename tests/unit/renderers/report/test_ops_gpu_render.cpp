// The ops and gpu sections of the report, text and JSON, on a trace-like
// run whose names try to break every format: valid JSON with the numbers,
// printable UTF-8 text.
#include <sstream>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "analyses/report.hpp"
#include "renderers/report/json.hpp"
#include "renderers/report/text.hpp"
#include "run_fixtures.hpp"

namespace {

constexpr int64_t kUs = 1000;

stepscope::Run hostile_trace() {
  stepscope::Run run;
  run.metadata["distributedInfo"] = R"({"rank": 2})";
  auto span = [&](stepscope::SpanKind kind, std::string_view name, int64_t start, int64_t end, int64_t pid,
                  int64_t tid, int64_t correlation) {
    stepscope::Span s{start * kUs, end * kUs, pid, tid, kind, run.strings.intern(name)};
    s.correlation = correlation;
    s.detail = run.strings.intern("[[1, 2]] \x1b[2J");
    run.spans.push_back(s);
  };
  span(stepscope::SpanKind::kCpuOp, stepscope::fixtures::kHostileCommand, 0, 100, 1, 1, 0);
  span(stepscope::SpanKind::kRuntimeCall, "cudaLaunchKernel", 10, 20, 1, 1, 5);
  span(stepscope::SpanKind::kKernel, stepscope::fixtures::kScriptName, 30, 70, 0, 7, 5);
  return run;
}

TEST(OpsGpuRender, JsonIsValidAndCarriesTheNumbers) {
  stepscope::Run run = hostile_trace();
  stepscope::Report report = stepscope::build_report(run, "t\n.json", {}, {.group_by_input_shapes = true});
  std::ostringstream out;
  stepscope::write_report_json(report, out);
  std::string text = out.str();
  ASSERT_TRUE(stepscope::fixtures::valid_utf8(text));
  EXPECT_EQ(text.find("<script>"), std::string::npos);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  simdjson::dom::array ops = root["ops"];
  ASSERT_EQ(ops.size(), 3u);  // the op, the runtime call, the kernel
  simdjson::dom::element first = ops.at(0);  // most self device time, then self CPU
  EXPECT_EQ(std::string_view(first["kind"]), "host");
  EXPECT_DOUBLE_EQ(double(first["self_device_us"]), 40.0);
  EXPECT_DOUBLE_EQ(double(first["self_cpu_us"]), 90.0);
  simdjson::dom::element rank = root["gpu"]["ranks"].at(0);
  EXPECT_EQ(int64_t(rank["rank"]), 2);
  EXPECT_DOUBLE_EQ(double(rank["temporal"]["span_us"]), 40.0);
  EXPECT_DOUBLE_EQ(double(rank["launch"]["launch_delay"]["max_us"]), 10.0);
  // Escaped in the text, the same name once parsed.
  EXPECT_EQ(std::string_view(rank["kernels"].at(0)["name"]), stepscope::fixtures::kScriptName);
}

TEST(OpsGpuRender, TextIsPrintable) {
  stepscope::Run run = hostile_trace();
  stepscope::Report report = stepscope::build_report(run, "t.json", {});
  std::ostringstream out;
  stepscope::write_report_text(report, out);
  std::string text = out.str();
  ASSERT_TRUE(stepscope::fixtures::valid_utf8(text));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("Operators (torch key_averages semantics"), std::string::npos);
  EXPECT_NE(text.find("Device activity, rank 2"), std::string::npos);
}

TEST(OpsGpuRender, TextOfAJobOfOneProcessNamesNoRank) {
  stepscope::Run run = hostile_trace();
  run.metadata.erase("distributedInfo");
  stepscope::Report report = stepscope::build_report(run, "t.json", {});
  std::ostringstream out;
  stepscope::write_report_text(report, out);
  EXPECT_NE(out.str().find("Device activity (t.json)"), std::string::npos);
  EXPECT_EQ(out.str().find("rank ?"), std::string::npos);
}

}  // namespace
