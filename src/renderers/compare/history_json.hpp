// `stepscope history --json`: format "stepscope.history/1" (docs/compare.md).
#pragma once

#include <ostream>
#include <vector>

#include "history/history_db.hpp"

namespace stepscope {

void write_history_json(const std::vector<HistoryEntry>& entries, std::ostream& out);

}  // namespace stepscope
