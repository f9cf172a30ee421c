// stepscope report RUN.db|TRACE [--json] [--html OUT.html] [--top N] [--idle] [--strict] [-o OUT]
#include "analyses/counter_series.hpp"
#include "analyses/flame_tree.hpp"
#include "analyses/report.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/output.hpp"
#include "renderers/report_html.hpp"
#include "renderers/report_json.hpp"
#include "renderers/report_text.hpp"

namespace stepscope::cli {

namespace {

struct ReportOptions {
  std::string input;
  std::string output = "-";
  bool output_given = false;
  std::string html;
  bool json = false;
  bool idle = false;
  bool strict = false;
  size_t top = 20;
};

void write_html(const Run& run, const Report& report, const ReportOptions& options, bool include_idle) {
  Profile profile = build_profile(run, {.include_idle = include_idle});
  FlameTree flame = build_flame_tree(run, profile, {.include_idle = include_idle});
  std::vector<CounterSeries> counters = build_counter_series(run);
  write_output(options.html, [&](std::ostream& out) {
    write_report_html({.report = report, .profile = profile, .flame = flame, .counters = counters}, out);
  });
}

int run_report(const ReportOptions& options) {
  Run run = open_run_or_trace(options.input, {.strict = options.strict});
  bool include_idle = options.idle || run_wants_idle(run);
  Report report = build_report(run, options.input, {.include_idle = include_idle});
  if (!options.html.empty()) {
    write_html(run, report, options, include_idle);
    // The page is the output asked for; text or JSON too only when asked.
    if (!options.json && !options.output_given) return 0;
  }
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
  cmd->add_option("--html", options->html,
                  "also write a self-contained HTML report (charts, flame graph, tables) to this file");
  cmd->add_option("--top", options->top, "functions to list")->capture_default_str();
  cmd->add_flag("--idle", options->idle,
                "count samples of idle threads too (default: only when recorded with --idle)");
  cmd->add_flag("--strict", options->strict,
                "a trace with tolerated problems (see docs/import.md) is an error, not a warning");
  CLI::Option* output = cmd->add_option("-o,--output", options->output, "output file, or - for standard output")
                            ->capture_default_str();
  return [options, output] {
    options->output_given = output->count() > 0;
    return run_report(*options);
  };
}

}  // namespace stepscope::cli
