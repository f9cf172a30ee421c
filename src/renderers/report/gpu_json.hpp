// The "gpu" object of `stepscope report --json` (docs/gpu.md).
#pragma once

#include <optional>
#include <string>

#include "analyses/device/gpu.hpp"
#include "analyses/device/rank_comparison.hpp"

namespace stepscope {

// The comparison is written when there is one (several ranks).
void append_gpu_json(const GpuAnalysis& gpu,
                     const std::optional<RankComparison>& comparison, std::string& out);

}  // namespace stepscope
