// Human labels of the frames the stack renderers draw, shared so that
// collapsed stacks, speedscope and flame graphs name things alike.
//
// Labels are raw bytes (names come from traces and processes): each
// renderer escapes them for its format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// A Python frame is `function (file:line)` (DESIGN.md's collapsed-stack
// convention), `function (file)` when the line is unknown and `function`
// when the file is; a native frame is `function (library)`, the library's
// file name without its folder, or `function` when the library is unknown;
// a marker frame is `function`. An unnamed function is `<unknown>`.
std::string frame_label(const StringTable& strings, const Frame& frame);

// A function's name as tables show it: `<unknown>` when it has none (a
// native frame where no symbol covers the pc).
inline std::string_view shown_function(std::string_view name) { return name.empty() ? "<unknown>" : name; }

// The labels of every frame of `frames`, indexed by FrameId.
std::vector<std::string> frame_labels(const StringTable& strings, const FrameTable& frames);

// `process PID "command"`, or `process PID` when the command is empty or
// the run does not know the process.
std::string process_label(const Run& run, int64_t pid);

// `thread TID "name"`, or `thread TID` when the name is empty or unknown.
std::string thread_label(const Run& run, int64_t pid, int64_t tid);

}  // namespace stepscope
