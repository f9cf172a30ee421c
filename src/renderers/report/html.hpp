// The HTML report: one self-contained page (docs/html-report.md).
//
// The page's scripts (web/report.js and the npm libraries, compiled in by
// web_assets) draw everything from one JSON document embedded in a
// <script type="application/json"> element: the stepscope.report/1 document
// (report/json.hpp), the flame tree and the downsampled counter series. Names are
// only ever JSON string content there, escaped so that no name can end the
// element, and the page's script inserts them as text, never as markup.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analyses/counter_series.hpp"
#include "analyses/flame_tree.hpp"
#include "analyses/report.hpp"

namespace stepscope {

struct HtmlReportInputs {
  const Report& report;
  const Profile& profile;  // the one `flame` was built from
  const FlameTree& flame;
  const std::vector<CounterSeries>& counters;
};

void write_report_html(const HtmlReportInputs& inputs, std::ostream& out);
// The same with the flame tree and counter series built here; `profile` was
// built from the report's run with `include_idle`.
void write_report_html(const Report& report, const Profile& profile, bool include_idle, std::ostream& out);

// The embedded document, JSON text ready for a <script> element.
std::string report_html_data(const HtmlReportInputs& inputs);

// Appends `json` made safe inside an HTML <script> element: `<` as \u003c
// (so neither "</script" nor "<!--" can appear) and the line separators
// U+2028/U+2029 as \u2028/\u2029 (which older JavaScript parsers reject in
// strings). Only valid where `<` and those characters can only occur inside
// JSON strings, which holds for every JSON document.
void append_script_safe_json(std::string& out, std::string_view json);

}  // namespace stepscope
