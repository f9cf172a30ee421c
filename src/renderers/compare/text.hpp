// `stepscope compare` for a terminal.
#pragma once

#include <ostream>

#include "analyses/compare/compare.hpp"

namespace stepscope {

void write_compare_text(const CompareResult& result, std::ostream& out);

}  // namespace stepscope
