// `stepscope history`: the runs of the history as a table.
#pragma once

#include <ostream>
#include <vector>

#include "history/history_db.hpp"

namespace stepscope {

void write_history_text(const std::vector<HistoryEntry>& entries, std::ostream& out);

}  // namespace stepscope
