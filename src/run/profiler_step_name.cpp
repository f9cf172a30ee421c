#include "run/profiler_step_name.hpp"

#include <algorithm>

namespace stepscope {

bool is_profiler_step_name(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || !name.starts_with(kPrefix)) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

void add_profiler_step_group(StringTable& strings) {
  for (StringId id = 0; id < strings.size(); ++id) {
    if (is_profiler_step_name(strings.get(id))) {
      strings.intern(kProfilerStepGroup);
      return;
    }
  }
}

}  // namespace stepscope
