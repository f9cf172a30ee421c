#include "publish/http_plugin.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "publish/http_plugin_api.hpp"
#include "util/companion_library.hpp"
#include "util/error.hpp"

namespace stepscope {

HttpPlugin::HttpPlugin(const std::string& what, const char* symbol_name) {
#ifdef STEPSCOPE_HTTP_BUILD_PATH
  const char* build_path = STEPSCOPE_HTTP_BUILD_PATH;
#else
  const char* build_path = nullptr;
#endif
  std::string path = find_companion_library(kHttpPluginName, "STEPSCOPE_HTTP_LIB", build_path);
  if (path.empty()) throw InputError(fmt::format("{}: {} not found beside stepscope", what, kHttpPluginName));
  // Never unmapped: the wheel's build (zig, libc++ linked into the library) registers the
  // library's static destructors as exit handlers that dlclose does not run, so an unmapped
  // library would be called at exit.
  library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library_) throw InputError(fmt::format("{}: cannot load {}: {}", what, path, dlerror()));
  symbol_ = dlsym(library_, symbol_name);
  if (!symbol_) {
    dlclose(library_);
    throw InputError(fmt::format("{}: {} has no {}", what, path, symbol_name));
  }
}

HttpPlugin::~HttpPlugin() { dlclose(library_); }

}  // namespace stepscope
