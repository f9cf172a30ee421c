// The machine-readable report, schema "stepscope.report/1" (docs/report-json.md).
#pragma once

#include <ostream>

#include "analyses/report.hpp"

namespace stepscope {

void write_report_json(const Report& report, std::ostream& out);

}  // namespace stepscope
