// One GET endpoint over HTTP, served on a thread of its own that takes no
// signal, by libstepscope-http.so (cpp-httplib), loaded only when something
// serves (publish/http_plugin_api.hpp says why it is a library of its own).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "publish/http_plugin.hpp"
#include "publish/http_plugin_api.hpp"

namespace stepscope {

class HttpServer {
 public:
  // Throws InputError when the library is missing or the address cannot be
  // listened on (`what` names the option, for the message).
  HttpServer(const std::string& what, const std::string& host, int port, const std::string& path,
             const std::string& content_type, std::function<std::string()> body);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return plugin_->port(); }

 private:
  HttpPlugin plugin_library_;  // kept open while the server lives
  std::unique_ptr<HttpServerPlugin> plugin_;
  std::thread thread_;
};

}  // namespace stepscope
