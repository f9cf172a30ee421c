// Finding _PyRuntime in a stripped interpreter that names it neither by a
// symbol nor by a .PyRuntime section (static or stripped builds of 3.8-3.10).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/process/memory.hpp"
#include "collectors/process/memory_maps.hpp"
#include "collectors/python/layout.hpp"

namespace stepscope::python {

// Scans the writable data of the image `path` (its writable mappings and the
// anonymous .bss mapping right after them) for a _PyRuntime whose first
// interpreter's first thread points back to that interpreter: the same
// walk that validates a symbol, tried at every aligned address. Slow (a few
// reads per pointer-like word), so only a last resort at attach time.
std::optional<uint64_t> scan_for_runtime(const ProcessMemory& memory, const PythonLayout& layout,
                                         const std::vector<MemoryMapping>& mappings,
                                         const std::string& path);

// For 3.13+: the address of the "xdebugpy" cookie that starts _PyRuntime
// (its _Py_DebugOffsets) in the same data ranges.
std::optional<uint64_t> scan_for_debug_cookie(const ProcessMemory& memory,
                                              const std::vector<MemoryMapping>& mappings,
                                              const std::string& path);

}  // namespace stepscope::python
