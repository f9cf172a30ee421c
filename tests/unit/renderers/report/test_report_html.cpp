#include "renderers/report/html.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <sstream>
#include <string>

#include "renderers/report/web_assets.hpp"
#include "run_fixtures.hpp"

namespace stepscope {
namespace {

size_t count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportHtml, ScriptSafeJsonEscapesWhatCouldEndTheElement) {
  std::string out;
  append_script_safe_json(out, "{\"a\":\"</script><!-- \xE2\x80\xA8 \xE2\x80\xA9 \xE2\x80\xA7\"}");
  EXPECT_EQ(out, "{\"a\":\"\\u003c/script>\\u003c!-- \\u2028 \\u2029 \xE2\x80\xA7\"}");
  simdjson::dom::parser parser;
  std::string_view a;
  ASSERT_FALSE(parser.parse(out)["a"].get(a));
  EXPECT_EQ(a, "</script><!-- \xE2\x80\xA8 \xE2\x80\xA9 \xE2\x80\xA7");
}

struct Rendered {
  std::string page, data;
};

Rendered render(const stepscope::Run& run) {
  Report report = build_report(run, "run <b>.db", {});
  Profile profile = build_profile(run);
  FlameTree flame = build_flame_tree(run, profile, {.include_idle = false, .min_fraction = 0});
  std::vector<CounterSeries> counters = build_counter_series(run);
  HtmlReportInputs inputs{.report = report, .profile = profile, .flame = flame, .counters = counters};
  std::ostringstream page;
  write_report_html(inputs, page);
  return {page.str(), report_html_data(inputs)};
}

TEST(ReportHtml, HostileNamesNeverReachThePageAsMarkup) {
  stepscope::Run run = fixtures::sampled_run();
  Rendered r = render(run);
  EXPECT_TRUE(fixtures::valid_utf8(r.page));
  EXPECT_EQ(r.page.find(fixtures::kScriptName), std::string::npos);
  EXPECT_EQ(r.page.find("<b>\"w\""), std::string::npos);
  EXPECT_EQ(r.page.find("run <b>.db"), std::string::npos);
  EXPECT_NE(r.page.find("<title>stepscope report: run &lt;b&gt;.db</title>"), std::string::npos);
  // Every script element closes where it should: the libraries', ours and the data's.
  EXPECT_EQ(count(r.page, "</script"), web::report_scripts().size() + 1);
  EXPECT_EQ(count(r.data, "<"), 0u);
  // The names are still there, as JSON text the page inserts as text.
  simdjson::dom::parser parser;
  simdjson::dom::element data;
  ASSERT_FALSE(parser.parse(r.data).get(data));
  bool found = false;
  for (auto name : data["flame"]["names"].get_array()) found |= name.get_string().value() == std::string_view("<script>alert(1)</script> (evil]]>.py:7)");
  EXPECT_TRUE(found);
  EXPECT_EQ(data["report"]["schema"].get_string().value(), "stepscope.report/1");
}

TEST(ReportHtml, DataHoldsTheFlameTreeAndCountersOnTheRunsTimeAxis) {
  stepscope::Run run = fixtures::sampled_run();
  run.counter_tracks.push_back({run.strings.intern("cpu.total.percent"), 0, run.strings.intern("percent")});
  run.counter_values.push_back({0, 5'000'000'000 + 2'000'000, 50.0});
  Rendered r = render(run);
  simdjson::dom::parser parser;
  simdjson::dom::element data;
  ASSERT_FALSE(parser.parse(r.data).get(data));
  EXPECT_EQ(data["origin_ns"].get_int64().value(), 5'000'000'000);  // the first sample
  auto counter = data["counters"].at(0);
  EXPECT_EQ(counter["name"].get_string().value(), "cpu.total.percent");
  EXPECT_EQ(counter["t_us"].at(0).get_int64().value(), 2000);
  EXPECT_EQ(counter["values"].at(0).get_double().value(), 50.0);
  // No steps, so no phases; each process's root holds all its samples.
  EXPECT_TRUE(data["flame"]["phases"].is_null());
  auto processes = data["flame"]["processes"].get_array();
  ASSERT_EQ(processes.size(), 2u);
  auto root = processes.at(0)["nodes"].at(0);
  EXPECT_EQ(root.at(0).get_int64().value(), -1);
  EXPECT_EQ(root.at(2).get_int64().value(), 20 * fixtures::kSamplePeriodNs);  // process 100: 20 samples
}

}  // namespace
}  // namespace stepscope
