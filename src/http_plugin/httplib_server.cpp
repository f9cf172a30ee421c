// libstepscope-http.so: record --metrics' HTTP server, cpp-httplib from Debian
// (its client, for MLflow, is httplib_client.cpp).
// A library of its own because Debian builds cpp-httplib with OpenSSL and
// Brotli: linked into stepscope they would cost every command about 2 ms of
// start-up, and only a recording that serves needs them (bench/README.md).
#include <httplib.h>

#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "publish/http_plugin_api.hpp"

namespace stepscope {

namespace {

class HttplibServer : public HttpServerPlugin {
 public:
  explicit HttplibServer(int port) : port_(port) {}
  httplib::Server& server() { return server_; }
  int port() const override { return port_; }
  void run() override { server_.listen_after_bind(); }
  // stop() only stops a server that runs: one stopped before its thread began to
  // listen would listen forever. The thread starts at once; a second is ample.
  void stop() override {
    for (int waited_ms = 0; !server_.is_running() && waited_ms < 1000; ++waited_ms) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server_.stop();
  }
  void set_port(int port) { port_ = port; }

 private:
  httplib::Server server_;
  int port_;
};

}  // namespace

}  // namespace stepscope

extern "C" __attribute__((visibility("default"))) stepscope::HttpServerPlugin* stepscope_http_serve(
    const std::string& host, int port, const std::string& path, const std::string& content_type,
    std::function<std::string()> body, std::string& error) {
  auto plugin = std::make_unique<stepscope::HttplibServer>(port);
  httplib::Server& server = plugin->server();
  // One request at a time: a scraper or two, never a crowd.
  server.new_task_queue = [] { return new httplib::ThreadPool(1); };
  server.Get(path, [body = std::move(body), content_type](const httplib::Request&, httplib::Response& response) {
    response.set_content(body(), content_type.c_str());
  });
  int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    error = "in use, or not an address of this machine";
    return nullptr;
  }
  plugin->set_port(bound);
  return plugin.release();
}
