#include "util/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace stepscope {

std::string demangled(std::string_view name) {
  constexpr size_t kLongest = 64 * 1024;
  if (!name.starts_with("_Z") || name.size() > kLongest) return std::string(name);
  std::string terminated(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(terminated.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : terminated;
}

}  // namespace stepscope
