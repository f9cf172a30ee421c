// Function and kernel names as tables show them. Kineto names a kernel by its
// whole C++ signature, hundreds to thousands of characters, in which the
// template arguments tell two instances apart ("...<float, 5ul>" against
// "...<float, 2ul>") and the parameter list rarely does; a Python function's
// name ends in its file. A cut at the end, at the width of a column, would
// show two different kernels, or two files' functions, as one name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stepscope {

// printable_utf8(name) in at most max_chars bytes: a name that is longer and
// ends in a C++ parameter list has that list written "(...)"; a name still
// too long loses its middle ("void spl...5ul>(...)").
std::string printable_symbol(std::string_view name, size_t max_chars);

}  // namespace stepscope
