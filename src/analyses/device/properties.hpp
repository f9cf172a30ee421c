// The devices a torch.profiler trace describes in its "deviceProperties"
// header (kept by the importer as JSON text in the Run's metadata).
#pragma once

#include <cstdint>
#include <map>

#include "run/run.hpp"

namespace stepscope {

// Device id -> totalGlobalMem in bytes. Entries without a non-negative
// integer "id" and a positive "totalGlobalMem" (an MTIA device, a
// truncated header) are left out: an unknown capacity, never a guessed one.
std::map<int, double> device_memory_capacities(const Run& run);

}  // namespace stepscope
