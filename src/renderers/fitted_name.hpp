// Names as tables show them, cut to a column: functions, kernels, files.
// Their ends tell them apart. Kineto names a kernel by its whole C++
// signature, hundreds to thousands of characters, in which the template
// arguments tell two instances apart ("...<float, 5ul>" against
// "...<float, 2ul>") and the parameter list rarely does; a file's path ends
// in its name. A cut at the end would show two different kernels, or two
// files, as one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stepscope {

// printable_utf8(name) in at most max_chars bytes: a name that is longer and
// ends in a C++ parameter list has that list written "(...)"; a name still
// too long loses its middle ("void spl...5ul>(...)").
std::string fitted_name(std::string_view name, size_t max_chars);

}  // namespace stepscope
