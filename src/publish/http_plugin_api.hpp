// The interface between stepscope and libstepscope-http.so, the library that
// holds cpp-httplib: record --metrics' server, and the client that talks to
// an MLflow tracking server. Both are built from this tree by the same
// compiler, so C++ types cross the boundary; only the entry points have C
// linkage, for dlsym.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace stepscope {

class HttpServerPlugin {
 public:
  virtual ~HttpServerPlugin() = default;
  virtual int port() const = 0;  // the bound port (the kernel's choice for 0)
  virtual void run() = 0;        // serves until stop(); on a thread of the caller's
  virtual void stop() = 0;
};

// A GET of `path` answers `body()` (called on the serving thread) as `content_type`;
// anything else, 404. Null, with `error` set, when the address cannot be listened on.
using HttpServeFunction = HttpServerPlugin* (*)(const std::string& host, int port, const std::string& path,
                                                const std::string& content_type, std::function<std::string()> body,
                                                std::string& error);

struct HttpRequest {
  std::string method;  // GET, POST or PUT
  std::string origin;  // scheme://host[:port]
  std::string path;    // from the first '/', query included
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type;
  std::string body;
  std::string body_file;  // when set, the body is this file, streamed (`body` is ignored)
  std::string bearer_token;                  // Authorization: Bearer, when set
  std::string basic_user, basic_password;    // else Authorization: Basic, when a user is set
  int timeout_s = 30;
};

struct HttpResponse {
  int status = 0;     // 0: no answer; `error` says why
  std::string error;  // the transport's failure (connection refused, timeout, TLS)
  std::string body;
};

// One request, on the caller's thread; never throws.
using HttpRequestFunction = HttpResponse (*)(const HttpRequest& request);

inline constexpr const char* kHttpServeSymbol = "stepscope_http_serve";
inline constexpr const char* kHttpRequestSymbol = "stepscope_http_request";
inline constexpr const char* kHttpPluginName = "libstepscope-http.so";

}  // namespace stepscope
