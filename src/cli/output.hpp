// Writing a command's output to a file, or to standard output for "-".
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace stepscope::cli {

// Writes through a temporary file renamed into place, so a failed export
// never leaves a half-written file where a good one was. A path that exists
// and is not a regular file (/dev/null, a FIFO) is written to directly.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace stepscope::cli
