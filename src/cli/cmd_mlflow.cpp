// stepscope mlflow RUN.db|TRACE [--tracking-uri URI] [--experiment NAME] [--run-name NAME]
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/mlflow_upload.hpp"

namespace stepscope::cli {

Command add_mlflow_command(CLI::App& app) {
  auto input = std::make_shared<std::string>();
  auto target = std::make_shared<MlflowTarget>();
  CLI::App* cmd = app.add_subcommand("mlflow", "Log a run or trace to an MLflow tracking server, as an MLflow run");
  cmd->add_option("input", *input, "run file (RUN.db) or trace (.json, .json.gz)")->required();
  add_mlflow_options(cmd, *target, "");
  cmd->footer("Example:\n  stepscope mlflow run.db --tracking-uri http://127.0.0.1:5000 --experiment llm-pretrain\n"
              "Credentials: MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD.");
  return [input, target] {
    MlflowUpload upload(*target);  // the server first: a wrong URI fails before the run is read
    upload.upload(*input, open_run_or_trace(*input));
    return 0;
  };
}

}  // namespace stepscope::cli
