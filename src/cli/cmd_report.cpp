// stepscope report RUN.db|TRACE|DIR... [--json] [--html OUT.html] [--top N] [--idle] [--ops-by-shapes] [--color auto|always|never] [--strict] [--window W] [-o OUT]
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "analyses/collective_hang.hpp"
#include "analyses/report.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/output.hpp"
#include "importers/dump_file.hpp"
#include "renderers/report/hang_json.hpp"
#include "renderers/report/hang_text.hpp"
#include "renderers/report/html.hpp"
#include "renderers/report/json.hpp"
#include "renderers/report/text.hpp"
#include "run/run_file.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string output = "-";
  bool output_given = false;
  std::string html;
  bool json = false;
  bool idle = false;
  bool ops_by_shapes = false;
  bool strict = false;
  size_t top = 20;
  std::string color = "auto";
  std::string window;  // --window, for every input
};

// Colors for a person at a terminal; plain text into files and pipes, and
// for those who ask for none (https://no-color.org).
bool use_color(const ReportOptions& options) {
  if (options.color != "auto") return options.color == "always";
  const char* term = std::getenv("TERM");
  return options.output == "-" && isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr &&
         !(term && std::string_view(term) == "dumb");
}

void write_html(const Run& run, const Report& report, const ReportOptions& options, bool include_idle) {
  Profile profile = build_profile(run, {.include_idle = include_idle});
  write_output(options.html, [&](std::ostream& out) { write_report_html(report, profile, include_idle, out); });
}

// Dumps of a hung job's nodes: where each rank is, and why the job hangs.
// Runs beside them are nodes whose recording ended: their ranks exited.
int run_hang_report(const std::vector<std::string>& inputs, const ReportOptions& options) {
  if (!options.html.empty()) throw InputError("--html: a report over dumps is text or JSON");
  std::vector<Dump> dumps;
  for (const std::string& input : inputs) {
    dumps.push_back(is_dump_file(input) ? read_dump_file(input) : exits_of_run(load_run(input), input));
  }
  HangAnalysis hang = analyse_hang(dumps);
  write_output(options.output, [&](std::ostream& out) {
    if (options.json) {
      write_hang_json(hang, out);
    } else {
      write_hang_text(hang, TextStyle(use_color(options)), out);
    }
  });
  return 0;
}

int run_report(const ReportOptions& options) {
  std::vector<std::string> inputs = expand_inputs(options.inputs);
  if (std::any_of(inputs.begin(), inputs.end(), is_dump_file)) return run_hang_report(inputs, options);
  // No analysis reads a trace's flows: binding them is left out (a tenth of
  // the time on large traces), except under --strict, which refuses the
  // traces that `import --strict` refuses, flows that bind to nothing included.
  const ChromeTraceOptions trace_options{.strict = options.strict, .flows = options.strict};
  OpenRank open_rank = [&](const std::string& path) { return open_run_or_trace(path, trace_options, options.window); };
  // Other ranks side by side, while the first is read, as many at once as
  // fit in memory: only their device figures and findings stay there.
  std::vector<std::string> others(inputs.begin() + 1, inputs.end());
  BackgroundRanks other_ranks(others, open_rank,
                              runs_at_once(inputs.front(), others, options.window, kMostRanksAtOnce));
  Run run = open_rank(inputs.front());
  bool include_idle = options.idle || run_wants_idle(run);
  Report report = build_report(run, inputs.front(), {.include_idle = include_idle},
                               {.group_by_input_shapes = options.ops_by_shapes});
  add_ranks(report, other_ranks.take(), open_rank);
  if (!options.html.empty()) {
    write_html(run, report, options, include_idle);
    // The page is the output asked for; text or JSON too only when asked.
    if (!options.json && !options.output_given) return 0;
  }
  write_output(options.output, [&](std::ostream& out) {
    if (options.json) {
      write_report_json(report, out);
    } else {
      write_report_text(report, out, {.top_functions = options.top, .color = use_color(options)});
    }
  });
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "What a run or trace spent its time on");
  cmd->add_option("input", options->inputs,
                  "run file (RUN.db) or trace (.json, .json.gz); several runs, traces or a directory of "
                  "them: the ranks of one job, compared; dumps (dump --json) of a hung job's nodes: why it hangs")
      ->required();
  cmd->add_flag("--json", options->json, "machine-readable JSON (schema stepscope.report/1)");
  cmd->add_option("--html", options->html,
                  "also write a self-contained HTML report (charts, flame graph, tables) to this file");
  cmd->add_option("--top", options->top, "functions, operators and kernels to list")->capture_default_str();
  cmd->add_flag("--idle", options->idle,
                "count samples of idle threads too (default: only when recorded with --idle)");
  cmd->add_flag("--ops-by-shapes", options->ops_by_shapes,
                "group operators by input shapes too (torch's group_by_input_shape)");
  cmd->add_option("--color", options->color, "ANSI colors in the text report: auto (on a terminal), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  add_window_option(cmd, options->window);
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
