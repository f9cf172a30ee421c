// stepscope import TRACE -o RUN.db [--strict]
#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "importers/chrome_trace.hpp"
#include "renderers/escape.hpp"
#include "run/run_file.hpp"

namespace stepscope::cli {

namespace {

struct ImportOptions {
  std::string trace;
  std::string output;
  bool strict = false;
};

int run_import(const ImportOptions& options) {
  Run run = import_chrome_trace(options.trace, {.strict = options.strict});
  // Tolerated problems are worth a look before trusting the numbers.
  if (auto warnings = run.metadata.find("import_warnings"); warnings != run.metadata.end()) {
    std::string_view lines = warnings->second;
    for (size_t end; !lines.empty(); lines.remove_prefix(std::min(end + 1, lines.size()))) {
      end = std::min(lines.find('\n'), lines.size());
      fmt::print(stderr, "stepscope: warning: {}\n", printable_utf8(lines.substr(0, end)));
    }
  }
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
  cmd->add_flag("--strict", options->strict,
                "a trace with tolerated problems (see docs/import.md) is an error, not a warning");
  return [options] { return run_import(*options); };
}

}  // namespace stepscope::cli
