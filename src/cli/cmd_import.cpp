// stepscope import TRACE -o RUN.db
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "importers/chrome_trace.hpp"
#include "run/run_file.hpp"

namespace stepscope::cli {

namespace {

struct ImportOptions {
  std::string trace;
  std::string output;
};

int run_import(const ImportOptions& options) {
  Run run = import_chrome_trace(options.trace);
  save_run(run, options.output);
  fmt::print("{}: {} spans, {} flows, {} counter values from {} processes\n", options.output,
             run.spans.size(), run.flows.size(), run.counter_values.size(), run.processes.size());
  return 0;
}

}  // namespace

Command add_import_command(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Import a torch.profiler / Chrome trace (.json, .json.gz) into a run file");
  cmd->add_option("trace", options->trace, "trace file")->required();
  cmd->add_option("-o,--output", options->output, "run file to write")->required();
  return [options] { return run_import(*options); };
}

}  // namespace stepscope::cli
