// MLflow's tracking server, over its REST API (api/2.0/mlflow/...) and its
// artifact proxy (api/2.0/mlflow-artifacts/...), as `stepscope mlflow` and
// `record --mlflow` use it (docs/mlflow.md). Credentials come from the
// environment, as MLflow's own clients take them: MLFLOW_TRACKING_TOKEN
// (bearer), or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (basic).
//
// Every failure is an InputError that names the tracking URI: the server
// unreachable, credentials refused, an experiment missing, an answer that is
// not MLflow's.
#pragma once

#include <cstdint>
#include <string>

#include "publish/http_plugin.hpp"
#include "publish/http_plugin_api.hpp"
#include "renderers/mlflow/mlflow_run.hpp"

namespace stepscope {

struct MlflowRunRef {
  std::string run_id;
  std::string experiment_id;
  std::string artifact_uri;  // mlflow-artifacts:/EXPERIMENT/RUN/artifacts when the server proxies them
};

// MLflow's limits on one runs/log-batch request.
inline constexpr size_t kMlflowBatchMetrics = 1000;
inline constexpr size_t kMlflowBatchParams = 100;
inline constexpr size_t kMlflowBatchTags = 100;

class MlflowClient {
 public:
  // `tracking_uri`: http(s)://HOST[:PORT][/PREFIX]. Throws InputError for
  // any other kind (a local path, databricks, ...).
  explicit MlflowClient(const std::string& tracking_uri);

  const std::string& uri() const { return uri_; }
  // The id of the experiment `name`; the Default experiment's ("0") when
  // `name` is empty. Either way, checks that the server answers.
  std::string experiment_id(const std::string& name);
  // A new run, RUNNING. An empty `run_name` lets the server choose one.
  MlflowRunRef create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms);
  // Params, tags and metrics of `content`, in batches within MLflow's limits.
  void log(const MlflowRunRef& run, const MlflowRunContent& content);
  // Uploads `body` (or, with `from_file`, the file at `body`) as the run's artifact `name`.
  void upload_artifact(const MlflowRunRef& run, const std::string& name, const std::string& body,
                       const std::string& content_type, bool from_file = false);
  // Sets the run's status (FINISHED, FAILED) and end time.
  void end_run(const MlflowRunRef& run, const char* status, int64_t end_ms);

 private:
  std::string call(const char* method, const std::string& api_path, const std::string& body, const std::string& what);
  HttpRequest request(const char* method, const std::string& path) const;
  HttpResponse send(const HttpRequest& request) const;
  void check(const HttpResponse& response, const std::string& what) const;

  std::string uri_;
  std::string origin_;  // scheme://host[:port]
  std::string prefix_;  // the URI's path, without a trailing '/'
  std::string bearer_token_, basic_user_, basic_password_;
  HttpPlugin http_;
};

// `text` percent-encoded for a URL's path segment or query value (RFC 3986:
// all but unreserved characters).
std::string percent_encoded(std::string_view text);

}  // namespace stepscope
