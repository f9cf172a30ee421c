// `stepscope compare --json`: format "stepscope.compare/1" (docs/compare.md).
#pragma once

#include <ostream>

#include "analyses/compare/compare.hpp"

namespace stepscope {

inline constexpr const char* kCompareJsonFormat = "stepscope.compare/1";

void write_compare_json(const CompareResult& result, std::ostream& out);

}  // namespace stepscope
