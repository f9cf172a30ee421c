// `report DUMP.json... --json`: the hang analysis as one JSON document
// (schema stepscope.hang/1, docs/report-json.md "Hangs").
#pragma once

#include <ostream>

#include "analyses/collective_hang.hpp"

namespace stepscope {

void write_hang_json(const HangAnalysis& hang, std::ostream& out);

}  // namespace stepscope
