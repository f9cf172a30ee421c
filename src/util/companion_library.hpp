// Where a shared library that ships beside stepscope is: the one the CUPTI
// injection loads (libstepscope-cupti.so), the HTTP server record --metrics
// loads (libstepscope-http.so). Looked for, in order: the path in the
// environment variable `env_override` (when set, only there), next to the
// executable, in ../lib/stepscope from it (an installed tree), and where the
// build put it (`build_path`, may be null). Empty when it is nowhere.
#pragma once

#include <string>
#include <string_view>

namespace stepscope {

std::string find_companion_library(std::string_view file_name, const char* env_override, const char* build_path);

}  // namespace stepscope
