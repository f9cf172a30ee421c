// libstepscope-http.so's client side: one HTTP(S) request with cpp-httplib,
// for the MLflow tracking server's REST API and artifact proxy.
#include <httplib.h>

#include <cstdio>
#include <memory>

#include "publish/http_plugin_api.hpp"

namespace stepscope {

namespace {

httplib::Headers headers_of(const HttpRequest& request) {
  httplib::Headers headers;
  for (const auto& [name, value] : request.headers) headers.emplace(name, value);
  return headers;
}

// Streams the file in 1 MiB pieces, so a large run file is never whole in memory.
httplib::Result put_file(httplib::Client& client, const HttpRequest& request, HttpResponse& response) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(request.body_file.c_str(), "rb"), std::fclose);
  if (!file || std::fseek(file.get(), 0, SEEK_END) != 0) {
    response.error = "cannot read " + request.body_file;
    return httplib::Result(nullptr, httplib::Error::Unknown);
  }
  long size = std::ftell(file.get());
  std::rewind(file.get());
  auto provide = [&file](size_t offset, size_t length, httplib::DataSink& sink) {
    std::string piece(std::min<size_t>(length, size_t{1} << 20), '\0');
    if (std::fseek(file.get(), static_cast<long>(offset), SEEK_SET) != 0) return false;
    size_t got = std::fread(piece.data(), 1, piece.size(), file.get());
    return got > 0 && sink.write(piece.data(), got);
  };
  return client.Put(request.path.c_str(), headers_of(request), static_cast<size_t>(size < 0 ? 0 : size), provide,
                    request.content_type.c_str());
}

httplib::Result send(httplib::Client& client, const HttpRequest& request, HttpResponse& response) {
  httplib::Headers headers = headers_of(request);
  if (request.method == "GET") return client.Get(request.path.c_str(), headers);
  if (request.method == "POST") {
    return client.Post(request.path.c_str(), headers, request.body, request.content_type.c_str());
  }
  if (request.method == "PUT" && !request.body_file.empty()) return put_file(client, request, response);
  if (request.method == "PUT") {
    return client.Put(request.path.c_str(), headers, request.body, request.content_type.c_str());
  }
  response.error = "method " + request.method + " is not supported";
  return httplib::Result(nullptr, httplib::Error::Unknown);
}

}  // namespace

}  // namespace stepscope

extern "C" __attribute__((visibility("default"))) stepscope::HttpResponse stepscope_http_request(
    const stepscope::HttpRequest& request) {
  stepscope::HttpResponse response;
  try {
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
    // The wheel's cpp-httplib has no TLS (wheel/build-deps); without this, https:// reads as a bad address.
    if (request.origin.rfind("https://", 0) == 0) {
      response.error = "this build of stepscope has no TLS support (the wheel speaks http:// only)";
      return response;
    }
#endif
    httplib::Client client(request.origin);
    if (!client.is_valid()) {
      response.error = "not an http:// or https:// address";
      return response;
    }
    client.set_connection_timeout(request.timeout_s, 0);
    client.set_read_timeout(request.timeout_s, 0);
    client.set_write_timeout(request.timeout_s, 0);
    if (!request.bearer_token.empty()) {
      client.set_bearer_token_auth(request.bearer_token.c_str());
    } else if (!request.basic_user.empty()) {
      client.set_basic_auth(request.basic_user.c_str(), request.basic_password.c_str());
    }
    httplib::Result result = stepscope::send(client, request, response);
    if (!result) {
      if (response.error.empty()) response.error = httplib::to_string(result.error());
      return response;
    }
    response.status = result->status;
    response.body = std::move(result->body);
  } catch (const std::exception& e) {  // never across the boundary
    response.error = e.what();
  }
  return response;
}
