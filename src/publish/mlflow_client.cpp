#include "publish/mlflow_client.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ranges>

#include <fmt/format.h>
#include <simdjson.h>

#include "renderers/escape.hpp"
#include "renderers/json_writer.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr const char* kApi = "/api/2.0/mlflow/";
constexpr const char* kArtifactsApi = "/api/2.0/mlflow-artifacts/artifacts/";
constexpr const char* kProxiedScheme = "mlflow-artifacts:";
constexpr size_t kQuotedAnswerBytes = 300;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// MLflow's error answer {"error_code": ..., "message": ...}, or the start of
// whatever else the server said.
std::string error_message(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::element answer;
  std::string_view message, code;
  if (!parser.parse(body).get(answer) && !answer["message"].get(message)) {
    if (answer["error_code"].get(code)) code = {};
    return code.empty() ? std::string(message) : fmt::format("{}: {}", code, message);
  }
  return printable_shortened(body, kQuotedAnswerBytes);
}

std::string_view string_at(simdjson::dom::element answer, std::initializer_list<const char*> path) {
  simdjson::dom::element at = answer;
  for (const char* key : path) {
    if (at[key].get(at)) return {};
  }
  std::string_view text;
  return at.get(text) ? std::string_view() : text;
}

void append_pairs(std::string& out, const MlflowPairs& pairs, size_t from, size_t count) {
  auto first = pairs.begin() + static_cast<std::ptrdiff_t>(from);
  append_json_array(out, std::ranges::subrange(first, first + static_cast<std::ptrdiff_t>(count)),
                    [](std::string& o, const auto& pair) {
                      JsonObject(o).text("key", pair.first).text("value", pair.second);
                    });
}

std::string batch_body(const std::string& run_id, const MlflowRunContent& content, size_t params_from,
                       size_t params, size_t tags_from, size_t tags, size_t metrics_from, size_t metrics) {
  std::string body;
  {
    JsonObject batch(body);
    batch.text("run_id", run_id);
    batch.field("params");
    append_pairs(body, content.params, params_from, params);
    batch.field("tags");
    append_pairs(body, content.tags, tags_from, tags);
    batch.field("metrics");
    auto first = content.metrics.begin() + static_cast<std::ptrdiff_t>(metrics_from);
    append_json_array(body, std::ranges::subrange(first, first + static_cast<std::ptrdiff_t>(metrics)),
                      [](std::string& out, const MlflowMetric& m) {
                        JsonObject point(out);
                        point.text("key", m.key).number("value", m.value);
                        point.number("timestamp", m.timestamp_ms).number("step", m.step);
                      });
  }
  return body;
}

}  // namespace

std::string percent_encoded(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    bool unreserved = std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
    out += unreserved ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return out;
}

MlflowClient::MlflowClient(const std::string& tracking_uri) : uri_(tracking_uri), http_("mlflow", kHttpRequestSymbol) {
  size_t scheme_end = uri_.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : uri_.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    throw InputError(fmt::format("mlflow: tracking URI '{}' is not an http:// or https:// address of a tracking "
                                 "server (stepscope talks to the server's REST API, not to its store)",
                                 uri_));
  }
  size_t path_start = uri_.find('/', scheme_end + 3);
  origin_ = uri_.substr(0, path_start);
  prefix_ = path_start == std::string::npos ? "" : uri_.substr(path_start);
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  bearer_token_ = environment("MLFLOW_TRACKING_TOKEN");
  basic_user_ = environment("MLFLOW_TRACKING_USERNAME");
  basic_password_ = environment("MLFLOW_TRACKING_PASSWORD");
}

HttpRequest MlflowClient::request(const char* method, const std::string& path) const {
  HttpRequest r;
  r.method = method;
  r.origin = origin_;
  r.path = prefix_ + path;
  r.bearer_token = bearer_token_;
  r.basic_user = basic_user_;
  r.basic_password = basic_password_;
  return r;
}

HttpResponse MlflowClient::send(const HttpRequest& request) const {
  return http_.entry<HttpRequestFunction>()(request);
}

void MlflowClient::check(const HttpResponse& response, const std::string& what) const {
  if (response.status == 0) {
    throw InputError(fmt::format("mlflow: cannot reach the tracking server {} ({}) to {}", uri_, response.error, what));
  }
  if (response.status == 401 || response.status == 403) {
    throw InputError(fmt::format(
        "mlflow: the tracking server {} refused to {} (HTTP {}: {}); set MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN, to credentials it accepts",
        uri_, what, response.status, printable_shortened(response.body, kQuotedAnswerBytes)));
  }
  if (response.status < 200 || response.status >= 300) {
    throw InputError(fmt::format("mlflow: the tracking server {} could not {} (HTTP {}: {})", uri_, what,
                                 response.status, error_message(response.body)));
  }
}

std::string MlflowClient::call(const char* method, const std::string& api_path, const std::string& body,
                               const std::string& what) {
  HttpRequest r = request(method, kApi + api_path);
  r.content_type = "application/json";
  r.body = body;
  HttpResponse response = send(r);
  check(response, what);
  return std::move(response.body);
}

std::string MlflowClient::experiment_id(const std::string& name) {
  const bool by_name = !name.empty();
  HttpRequest r = request("GET", by_name ? fmt::format("{}experiments/get-by-name?experiment_name={}", kApi,
                                                       percent_encoded(name))
                                         : fmt::format("{}experiments/get?experiment_id=0", kApi));
  HttpResponse response = send(r);
  std::string what = by_name ? fmt::format("find the experiment '{}'", name) : "find the Default experiment";
  if (response.status == 404 && response.body.find("RESOURCE_DOES_NOT_EXIST") != std::string::npos) {
    throw InputError(fmt::format("mlflow: the tracking server {} has no experiment '{}': create it (mlflow "
                                 "experiments create -n NAME) or name another with --experiment",
                                 uri_, by_name ? name : "Default"));
  }
  check(response, what);
  simdjson::dom::parser parser;
  simdjson::dom::element answer;
  std::string_view id;
  if (parser.parse(response.body).get(answer) || (id = string_at(answer, {"experiment", "experiment_id"})).empty()) {
    throw InputError(fmt::format("mlflow: {} is not an MLflow tracking server (its answer to {} names no "
                                 "experiment: {})",
                                 uri_, r.path, printable_shortened(response.body, kQuotedAnswerBytes)));
  }
  return std::string(id);
}

MlflowRunRef MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms) {
  std::string body;
  {
    JsonObject run(body);
    run.text("experiment_id", experiment_id).number("start_time", start_ms);
    if (!run_name.empty()) run.text("run_name", run_name);
  }
  std::string answer_text = call("POST", "runs/create", body, "create a run");
  simdjson::dom::parser parser;
  simdjson::dom::element answer;
  MlflowRunRef ref;
  ref.experiment_id = experiment_id;
  if (!parser.parse(answer_text).get(answer)) {
    ref.run_id = string_at(answer, {"run", "info", "run_id"});
    ref.artifact_uri = string_at(answer, {"run", "info", "artifact_uri"});
  }
  if (ref.run_id.empty()) {
    throw InputError(fmt::format("mlflow: the tracking server {} created a run but named no run_id: {}", uri_,
                                 printable_shortened(answer_text, kQuotedAnswerBytes)));
  }
  return ref;
}

void MlflowClient::log(const MlflowRunRef& run, const MlflowRunContent& content) {
  size_t params = 0, tags = 0, metrics = 0;
  do {
    // Params and tags go first; metrics fill what is left of the request's 1000 entities.
    size_t p = std::min(content.params.size() - params, kMlflowBatchParams);
    size_t t = std::min(content.tags.size() - tags, kMlflowBatchTags);
    size_t m = std::min(content.metrics.size() - metrics, kMlflowBatchMetrics - p - t);
    call("POST", "runs/log-batch", batch_body(run.run_id, content, params, p, tags, t, metrics, m),
         fmt::format("log a batch of {} metrics, {} params and {} tags", m, p, t));
    params += p, tags += t, metrics += m;
  } while (params < content.params.size() || tags < content.tags.size() || metrics < content.metrics.size());
}

void MlflowClient::upload_artifact(const MlflowRunRef& run, const std::string& name, const std::string& body,
                                   const std::string& content_type, bool from_file) {
  std::string_view location = run.artifact_uri;
  if (!location.starts_with(kProxiedScheme)) {
    throw InputError(fmt::format(
        "mlflow: the tracking server {} keeps run {}'s artifacts at '{}', which it does not serve: start it "
        "with --serve-artifacts (MLflow's default) to receive the report and the run file",
        uri_, run.run_id, location));
  }
  location.remove_prefix(std::string_view(kProxiedScheme).size());
  if (location.starts_with("//")) location = location.substr(std::min(location.find('/', 2), location.size()));
  while (location.starts_with('/')) location.remove_prefix(1);
  HttpRequest r = request("PUT", fmt::format("{}{}/{}", kArtifactsApi, location, percent_encoded(name)));
  r.content_type = content_type;
  (from_file ? r.body_file : r.body) = body;
  r.timeout_s = 600;  // a run file of hundreds of megabytes
  HttpResponse response = send(r);
  check(response, fmt::format("store the artifact {}", name));
}

void MlflowClient::end_run(const MlflowRunRef& run, const char* status, int64_t end_ms) {
  std::string body;
  JsonObject(body).text("run_id", run.run_id).text("status", status).number("end_time", end_ms);
  call("POST", "runs/update", body, fmt::format("mark the run {}", status));
}

}  // namespace stepscope
