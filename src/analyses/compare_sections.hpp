// The named-cost sections of compare: which functions, operators and kernels
// got slower. Each section is one function from two runs to a DiffTable; an
// analysis that lands later (ops, gpu) adds its own here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analyses/compare.hpp"

namespace stepscope {

// Functions by share of the stack profile (self time), operators (cpu_op
// spans, inclusive) and kernels by time per step; sections with no rows on
// either side are left out. `*_steps` normalize span totals per step.
std::vector<DiffTable> compare_sections(const Run& base, size_t base_steps, const Run& cur, size_t cur_steps,
                                        size_t top);

// The `top` rows with the largest absolute difference, from two name->value maps.
std::vector<DiffRow> top_differences(const std::map<std::string, double>& base,
                                     const std::map<std::string, double>& cur, size_t top);

}  // namespace stepscope
