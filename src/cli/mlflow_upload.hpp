// Logging a run to an MLflow tracking server (stepscope mlflow, record --mlflow):
// the report's parameters, tags and metrics (renderers/mlflow/mlflow_run.hpp),
// and as artifacts the HTML report, the flame graph, report.json and the run
// file itself (docs/mlflow.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "publish/mlflow_client.hpp"
#include "run/run.hpp"

namespace stepscope::cli {

struct MlflowTarget {
  std::string tracking_uri;  // empty: MLFLOW_TRACKING_URI
  std::string experiment;    // empty: MLFLOW_EXPERIMENT_NAME, else the Default experiment
  std::string run_name;      // empty: the server names the run
};

// --tracking-uri, --experiment and --run-name, described for `for_what`.
std::vector<CLI::Option*> add_mlflow_options(CLI::App* command, MlflowTarget& target, const std::string& for_what);

class MlflowUpload {
 public:
  // Reaches the server and finds the experiment, so that a wrong URI,
  // credentials or experiment fail before anything is recorded or logged.
  explicit MlflowUpload(MlflowTarget target);

  // Logs `run`, read from `input_path`, as a new MLflow run; returns its id.
  // A failure after the run was created leaves it FAILED on the server.
  std::string upload(const std::string& input_path, const Run& run);

 private:
  MlflowTarget target_;
  std::unique_ptr<MlflowClient> client_;
  std::string experiment_id_;
};

}  // namespace stepscope::cli
