// The device section of `stepscope report` (terminal): per rank, the
// temporal and idle breakdowns, top kernels, launches and copies; with
// several ranks, the comparison and its stragglers.
#pragma once

#include <optional>
#include <ostream>

#include "analyses/device/gpu.hpp"
#include "analyses/device/rank_comparison.hpp"

namespace stepscope {

void write_gpu_text(const GpuAnalysis& gpu, const std::optional<RankComparison>& comparison,
                    std::ostream& out, size_t top);

}  // namespace stepscope
