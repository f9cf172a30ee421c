// The terminal rendering of a report: compact tables a person reads first.
#pragma once

#include <ostream>

#include "analyses/report.hpp"

namespace stepscope {

struct ReportTextOptions {
  size_t top_functions = 20;
};

void write_report_text(const Report& report, std::ostream& out, const ReportTextOptions& options = {});

}  // namespace stepscope
