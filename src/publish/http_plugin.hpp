// libstepscope-http.so, opened for as long as this object lives
// (publish/http_plugin_api.hpp says why it is a library of its own).
#pragma once

#include <string>

namespace stepscope {

class HttpPlugin {
 public:
  // Throws InputError when the library is missing or lacks `symbol_name`;
  // `what` names the option or command that needs it, for the message.
  HttpPlugin(const std::string& what, const char* symbol_name);
  ~HttpPlugin();
  HttpPlugin(const HttpPlugin&) = delete;
  HttpPlugin& operator=(const HttpPlugin&) = delete;

  // The entry point named at construction, as its type in http_plugin_api.hpp.
  template <typename Function>
  Function entry() const {
    return reinterpret_cast<Function>(symbol_);
  }

 private:
  void* library_ = nullptr;  // dlopen's handle
  void* symbol_ = nullptr;
};

}  // namespace stepscope
