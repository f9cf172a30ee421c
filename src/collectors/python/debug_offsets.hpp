// The layout of CPython 3.13+, from the offsets the interpreter publishes
// for external tools in _Py_DebugOffsets, the first member of _PyRuntime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collectors/process/memory.hpp"
#include "collectors/python/layout.hpp"

namespace stepscope::python {

// Reads _Py_DebugOffsets at `runtime_address` (the address of _PyRuntime)
// and fills a PythonLayout from it. nullopt with `error` set when the cookie
// is wrong (not a _PyRuntime), the version's format of the struct is not one
// we know, or the build is free-threaded (objects are laid out differently).
std::optional<PythonLayout> layout_from_debug_offsets(const ProcessMemory& memory,
                                                      uint64_t runtime_address,
                                                      std::string* error);

}  // namespace stepscope::python
