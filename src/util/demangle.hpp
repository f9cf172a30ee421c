// C++ symbol names as people read them: `void at::native::reduce_kernel<...>(...)`
// for `_ZN2at6native13reduce_kernel...`. CUPTI gives kernels their mangled names;
// Kineto demangles them, so a recorded run names kernels as a torch.profiler trace does.
#pragma once

#include <string>
#include <string_view>

namespace stepscope {

// The demangled form of an Itanium C++ ABI name (`_Z...`); anything else, a name
// that does not demangle, or one longer than 64 KiB (names come from other
// processes' files), comes back as it is.
std::string demangled(std::string_view name);

}  // namespace stepscope
