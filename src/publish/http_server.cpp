#include "publish/http_server.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "util/companion_library.hpp"
#include "util/error.hpp"
#include "util/signal_free_thread.hpp"

namespace stepscope {

namespace {

void* open_plugin(const std::string& what) {
#ifdef STEPSCOPE_HTTP_BUILD_PATH
  const char* build_path = STEPSCOPE_HTTP_BUILD_PATH;
#else
  const char* build_path = nullptr;
#endif
  std::string path = find_companion_library(kHttpPluginName, "STEPSCOPE_HTTP_LIB", build_path);
  if (path.empty()) throw InputError(fmt::format("{}: {} not found beside stepscope", what, kHttpPluginName));
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) throw InputError(fmt::format("{}: cannot load {}: {}", what, path, dlerror()));
  return library;
}

}  // namespace

HttpServer::HttpServer(const std::string& what, const std::string& host, int port, const std::string& path,
                       const std::string& content_type, std::function<std::string()> body)
    : library_(open_plugin(what)) {
  auto serve = reinterpret_cast<HttpServeFunction>(dlsym(library_, kHttpServeSymbol));
  std::string error = fmt::format("{} has no {}", kHttpPluginName, kHttpServeSymbol);
  if (serve) plugin_.reset(serve(host, port, path, content_type, std::move(body), error));
  if (!plugin_) {
    dlclose(library_);
    throw InputError(fmt::format("{}: cannot listen on {} port {} ({})", what, host, port, error));
  }
  thread_ = start_signal_free_thread([this] { plugin_->run(); });
}

HttpServer::~HttpServer() {
  plugin_->stop();
  if (thread_.joinable()) thread_.join();
  plugin_.reset();  // before its code goes
  dlclose(library_);
}

}  // namespace stepscope
