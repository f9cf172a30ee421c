// `stepscope sweep`'s chart: a self-contained HTML page (inline SVG, no
// script, nothing fetched) with throughput or step time per setting and its
// interval, and the table.
#pragma once

#include <ostream>
#include <string>

#include "analyses/compare/sweep.hpp"

namespace stepscope {

void write_sweep_html(const SweepResult& result, const std::string& command, std::ostream& out);

}  // namespace stepscope
