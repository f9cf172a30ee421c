// The terminal rendering of a report. The first screen says what to do: the
// verdict and the top findings with their evidence, throughput and step
// anatomy, the hottest functions; the details (processes, steps, the full
// function table) follow.
#pragma once

#include <ostream>

#include "analyses/report.hpp"

namespace stepscope {

struct ReportTextOptions {
  size_t top_functions = 20;     // in the details
  size_t hottest_functions = 5;  // on the first screen
  size_t detailed_findings = 3;  // with evidence on the first screen; the rest one line each
  bool color = false;            // ANSI styles (a terminal)
};

void write_report_text(const Report& report, std::ostream& out, const ReportTextOptions& options = {});

}  // namespace stepscope
