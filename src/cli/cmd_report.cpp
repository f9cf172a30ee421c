// stepscope report RUN.db|TRACE [--json] [--top N] [--idle] [--strict] [-o OUT]
#include "analyses/report.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/output.hpp"
#include "renderers/report_json.hpp"
#include "renderers/report_text.hpp"

namespace stepscope::cli {

namespace {

struct ReportOptions {
  std::string input;
  std::string output = "-";
  bool json = false;
  bool idle = false;
  bool strict = false;
  size_t top = 20;
};

int run_report(const ReportOptions& options) {
  Run run = open_run_or_trace(options.input, {.strict = options.strict});
  Report report =
      build_report(run, options.input, {.include_idle = options.idle || run_wants_idle(run)});
  write_output(options.output, [&](std::ostream& out) {
    if (options.json) {
      write_report_json(report, out);
    } else {
      write_report_text(report, out, {.top_functions = options.top});
    }
  });
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "What a run or trace spent its time on");
  cmd->add_option("input", options->input, "run file (RUN.db) or trace (.json, .json.gz)")
      ->required();
  cmd->add_flag("--json", options->json, "machine-readable JSON (schema stepscope.report/1)");
  cmd->add_option("--top", options->top, "functions to list")->capture_default_str();
  cmd->add_flag("--idle", options->idle,
                "count samples of idle threads too (default: only when recorded with --idle)");
  cmd->add_flag("--strict", options->strict,
                "a trace with tolerated problems (see docs/import.md) is an error, not a warning");
  cmd->add_option("-o,--output", options->output, "output file, or - for standard output")
      ->capture_default_str();
  return [options] { return run_report(*options); };
}

}  // namespace stepscope::cli
