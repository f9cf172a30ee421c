#include "cli/mlflow_upload.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "analyses/report.hpp"
#include "history/history_entry.hpp"
#include "renderers/export/flamegraph_svg.hpp"
#include "renderers/mlflow/mlflow_run.hpp"
#include "renderers/report/html.hpp"
#include "renderers/report/json.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

std::string value_or_environment(const std::string& value, const char* variable) {
  if (!value.empty()) return value;
  const char* set = std::getenv(variable);
  return set ? set : "";
}

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Artifact {
  std::string name, content_type, body;
  bool from_file = false;
};

// Everything is rendered before the MLflow run is created, so a failure here
// leaves nothing behind on the server.
std::vector<Artifact> render_artifacts(const std::string& input_path, const Report& report, bool include_idle) {
  Profile profile = build_profile(*report.run, {.include_idle = include_idle});
  auto rendered = [](const auto& write) {
    std::ostringstream out;
    write(out);
    return std::move(out).str();
  };
  FlamegraphOptions svg{.title = input_path};
  auto html = [&](std::ostream& out) { write_report_html(report, profile, include_idle, out); };
  auto flame = [&](std::ostream& out) { write_flamegraph_svg(*report.run, profile, out, svg); };
  auto json = [&](std::ostream& out) { write_report_json(report, out); };
  return {
      {"report.html", "text/html", rendered(html)},
      {"flamegraph.svg", "image/svg+xml", rendered(flame)},
      {"report.json", "application/json", rendered(json)},
      {std::filesystem::path(input_path).filename().string(), "application/octet-stream", input_path, true},
  };
}

}  // namespace

std::vector<CLI::Option*> add_mlflow_options(CLI::App* command, MlflowTarget& target, const std::string& for_what) {
  return {
      command->add_option("--tracking-uri", target.tracking_uri,
                          fmt::format("MLflow tracking server{}, http(s)://HOST:PORT (default: $MLFLOW_TRACKING_URI)",
                                      for_what)),
      command->add_option("--experiment", target.experiment,
                          fmt::format("MLflow experiment{}, which must exist (default: $MLFLOW_EXPERIMENT_NAME, else "
                                      "the Default experiment)",
                                      for_what)),
      command->add_option("--run-name", target.run_name,
                          fmt::format("name of the MLflow run{} (default: one the server chooses)", for_what)),
  };
}

MlflowUpload::MlflowUpload(MlflowTarget target) : target_(std::move(target)) {
  target_.tracking_uri = value_or_environment(target_.tracking_uri, "MLFLOW_TRACKING_URI");
  target_.experiment = value_or_environment(target_.experiment, "MLFLOW_EXPERIMENT_NAME");
  if (target_.tracking_uri.empty()) {
    throw InputError("mlflow: no tracking server: give --tracking-uri or set MLFLOW_TRACKING_URI");
  }
  client_ = std::make_unique<MlflowClient>(target_.tracking_uri);
  experiment_id_ = client_->experiment_id(target_.experiment);
}

std::string MlflowUpload::upload(const std::string& input_path, const Run& run) {
  bool include_idle = run_wants_idle(run);
  Report report = build_report(run, input_path, {.include_idle = include_idle});
  MlflowRunContent content =
      mlflow_run_content(report, {.git_commit = current_git_commit(), .now_unix_ms = now_unix_ms()});
  std::vector<Artifact> artifacts = render_artifacts(input_path, report, include_idle);

  MlflowRunRef ref = client_->create_run(experiment_id_, target_.run_name, content.start_ms);
  try {
    client_->log(ref, content);
    for (const Artifact& a : artifacts) client_->upload_artifact(ref, a.name, a.body, a.content_type, a.from_file);
    client_->end_run(ref, "FINISHED", content.end_ms);
  } catch (const InputError& error) {
    try {
      client_->end_run(ref, "FAILED", now_unix_ms());
    } catch (const InputError&) {
      // The first error says more; the run stays RUNNING on a server that went away.
    }
    throw InputError(
        fmt::format("{} (MLflow run {} is left FAILED; {} is untouched)", error.what(), ref.run_id, input_path));
  }
  fmt::print(stderr,
             "stepscope: logged {} to MLflow run {} (experiment {}, {}): {} params, {} tags, {} metric points, "
             "{} artifacts\n",
             input_path, ref.run_id, experiment_id_, target_.tracking_uri, content.params.size(), content.tags.size(),
             content.metrics.size(), artifacts.size());
  return ref.run_id;
}

}  // namespace stepscope::cli
