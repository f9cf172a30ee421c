// The interface between stepscope and libstepscope-http.so, the library that
// holds the HTTP server (cpp-httplib). Both are built from this tree by the
// same compiler, so C++ types cross the boundary; only the entry point has C
// linkage, for dlsym.
#pragma once

#include <functional>
#include <string>

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

inline constexpr const char* kHttpServeSymbol = "stepscope_http_serve";
inline constexpr const char* kHttpPluginName = "libstepscope-http.so";

}  // namespace stepscope
