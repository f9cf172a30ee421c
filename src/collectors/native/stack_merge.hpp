// Merging a thread's native stack with its Python stack: Python frames go
// where the interpreter's evaluation loop runs them, native frames of
// libraries and extensions stay between them, and the interpreter's own
// glue between two evaluation-loop calls is left out.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "collectors/native/native_unwinder.hpp"
#include "collectors/python/stack_reader.hpp"

namespace stepscope {

// The name of the marker frame between the parts of an unmerged stack.
inline constexpr std::string_view kUnmergedMarkerName = "<native stack not merged>";

// One frame of a merged stack: an index into the Python or the native part,
// or the marker put between the two parts of a stack that could not be merged.
struct MergedFrame {
  enum class Part : uint8_t { kPython, kNative, kUnmergedMarker };
  Part part = Part::kPython;
  uint32_t index = 0;
  bool operator==(const MergedFrame&) const = default;
};

// `python` and `native` innermost first, as their readers give them;
// `native_complete` says the unwind reached the thread's outermost frame.
// Writes the merged stack outermost first into `out` and returns true; a
// walk that stopped early puts the calls it did not reach outside what it
// found. When the two do not fit (the native stack holds more
// evaluation-loop calls than the Python stack has entry frames, or fewer
// although it is complete: the Python stack was read at another moment than
// the native one), writes the Python frames, the marker, then every native
// frame, and returns false, so that nothing is dropped.
bool merge_stacks(std::span<const PythonFrame> python, std::span<const NativeFrame> native,
                  bool native_complete, std::vector<MergedFrame>& out);

}  // namespace stepscope
