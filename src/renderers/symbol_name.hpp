// Function and kernel names as tables show them. Kineto names a kernel by its
// whole C++ signature, hundreds to thousands of characters, in which the
// template arguments tell two instances apart ("...<float, 5ul>" against
// "...<float, 2ul>") and the parameter list rarely does: a cut at the width
// of a column would show two different kernels as one name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stepscope {

// printable_shortened(name, max_chars), except for a name longer than
// max_chars that ends in a C++ parameter list: that list is written "(...)",
// and if the name is still too long, its middle is cut ("void spl...5ul>(...)").
std::string printable_symbol(std::string_view name, size_t max_chars);

}  // namespace stepscope
