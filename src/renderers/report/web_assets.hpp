// The HTML report's front end, compiled into the binary from web/ and the
// pinned npm libraries (cmake/embed_web_assets.cmake), so a report needs no
// network to open.
#pragma once

#include <span>
#include <string_view>

namespace stepscope::web {

// web/report.html, with the placeholders renderers/report/html.cpp fills.
std::string_view report_template();
// Style sheets, in page order: the libraries', then web/report.css.
std::span<const std::string_view> report_styles();
// Scripts, in load order: d3 modules, d3-flame-graph, uPlot, web/report.js.
std::span<const std::string_view> report_scripts();

}  // namespace stepscope::web
