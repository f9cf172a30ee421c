#include "publish/http_server.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/signal_free_thread.hpp"

namespace stepscope {

HttpServer::HttpServer(const std::string& what, const std::string& host, int port, const std::string& path,
                       const std::string& content_type, std::function<std::string()> body)
    : plugin_library_(what, kHttpServeSymbol) {
  std::string error;
  plugin_.reset(plugin_library_.entry<HttpServeFunction>()(host, port, path, content_type, std::move(body), error));
  if (!plugin_) {
    throw InputError(fmt::format("{}: cannot listen on {} port {} ({})", what, host, port, error));
  }
  thread_ = start_signal_free_thread([this] { plugin_->run(); });
}

HttpServer::~HttpServer() {
  plugin_->stop();
  if (thread_.joinable()) thread_.join();
  plugin_.reset();  // before its code goes
}

}  // namespace stepscope
