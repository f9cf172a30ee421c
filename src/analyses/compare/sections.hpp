// The named-cost sections of compare: which functions, operators and kernels
// got slower. Each section is one function from two runs to a DiffTable; an
// analysis that lands later (ops, gpu) adds its own here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analyses/compare/compare.hpp"

namespace stepscope {

// The steady steps a section describes: [start_ns, end_ns) and how many.
struct StepWindow {
  int64_t start_ns = 0, end_ns = 0;
  size_t steps = 0;
};

// Functions (self time in the stack profile, all threads), operators
// (cpu_op spans, inclusive) and kernels, in ms per steady step: only samples
// and spans that start inside the window count. Sections with no rows on
// either side are left out.
std::vector<DiffTable> compare_sections(const Run& base, const StepWindow& base_window, const Run& cur,
                                        const StepWindow& cur_window, size_t top);

// The `top` rows with the largest absolute difference, from two name->value maps.
std::vector<DiffRow> top_differences(const std::map<std::string, double>& base,
                                     const std::map<std::string, double>& cur, size_t top);

}  // namespace stepscope
