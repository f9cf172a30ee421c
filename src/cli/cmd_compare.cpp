// stepscope compare BASE CUR | --baseline last CUR [--threshold F] [--metric M]... [--skip N] [--window W]
//                   [--json|--markdown] [-o OUT]
#include <cstdlib>

#include <fmt/format.h>

#include "analyses/compare/compare.hpp"
#include "analyses/compare/steps.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/output.hpp"
#include "history/history_db.hpp"
#include "renderers/compare/json.hpp"
#include "renderers/compare/markdown.hpp"
#include "renderers/compare/text.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

struct CompareCliOptions {
  std::vector<std::string> inputs;
  std::string baseline;  // "last": from the history
  std::string history = kDefaultHistoryPath;
  std::string output = "-";
  std::vector<std::string> metrics;
  int64_t skip = -1;  // -1: the steps analysis's warm-up rule
  bool json = false, markdown = false;
  std::string window;  // --window, for both runs
  CompareOptions compare;
};

// A side read from a run file or trace; `run` must outlive the side.
CompareSide side_from_run(const Run& run, const std::string& path) {
  RunSteps steps = run_steps(run);
  if (steps.steps.empty()) {
    throw InputError(fmt::format(
        "{}: no steps (neither step spans from record's hooks nor ProfilerStep#N spans of a trace); "
        "compare needs per-step values",
        path));
  }
  return {path, steps.origin, std::move(steps.steps), steps.has_phases, &run};
}

int64_t run_start(const Run& run) {
  auto it = run.metadata.find("start_unix_ns");
  return it == run.metadata.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}

CompareSide side_from_history(const CompareCliOptions& options, const Run& cur, const std::string& cur_path) {
  if (options.baseline != "last") {
    throw InputError(fmt::format("--baseline {}: only 'last' is known", options.baseline));
  }
  auto command = cur.metadata.find("command");
  if (command == cur.metadata.end() || command->second.empty()) {
    throw InputError(fmt::format("{}: not a recorded run with a command, so no baseline can be found for it in {}",
                                 cur_path, options.history));
  }
  HistoryDb db(options.history, HistoryDb::Mode::kReadExisting);
  auto entry = db.latest_before(command->second, run_start(cur));
  if (!entry) {
    throw InputError(
        fmt::format("{}: no earlier run of the same command to compare {} with", options.history, cur_path));
  }
  std::string label = fmt::format("history #{}", entry->id);
  if (!entry->git_commit.empty()) label += fmt::format(" (commit {})", entry->git_commit.substr(0, 12));
  return {label, "history", db.steps(entry->id), entry->has_phases, nullptr};
}

int run_compare(CompareCliOptions& options) {
  size_t wanted = options.baseline.empty() ? 2 : 1;
  if (options.inputs.size() != wanted) {
    throw InputError(options.baseline.empty() ? "compare needs BASE and CUR (or --baseline last CUR)"
                                              : "with --baseline, give only CUR");
  }
  if (options.json && options.markdown) throw InputError("--json and --markdown exclude each other");
  if (!options.window.empty() && !options.baseline.empty()) {
    throw InputError("--window takes the same window of BASE and CUR; a --baseline from the history is a whole run");
  }
  if (options.skip >= 0) options.compare.skip = static_cast<size_t>(options.skip);
  options.compare.gating_metrics = options.metrics;
  const std::string& cur_path = options.inputs.back();
  const ChromeTraceOptions trace_options{.flows = false};  // the comparison reads none
  Run cur_run = open_run_or_trace(cur_path, trace_options, options.window);
  Run base_run;
  CompareSide base;
  if (options.baseline.empty()) {
    base_run = open_run_or_trace(options.inputs.front(), trace_options, options.window);
    base = side_from_run(base_run, options.inputs.front());
  } else {
    base = side_from_history(options, cur_run, cur_path);
  }
  CompareSide cur = side_from_run(cur_run, cur_path);
  CompareResult result = compare_runs(base, cur, options.compare);
  write_output(options.output, [&](std::ostream& out) {
    if (options.json) {
      write_compare_json(result, out);
    } else if (options.markdown) {
      write_compare_markdown(result, out);
    } else {
      write_compare_text(result, out);
    }
  });
  return result.regressed() ? 1 : 0;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Before/after with statistics: per-metric change, interval and verdict; exit status 1 on a "
                 "significant regression beyond the threshold");
  cmd->add_option("runs", options->inputs, "BASE and CUR: run files (RUN.db) or traces; CUR alone with --baseline")
      ->required()
      ->expected(1, 2);
  cmd->add_option("--baseline", options->baseline,
                  "'last': the latest earlier run of CUR's command in the history instead of BASE");
  cmd->add_option("--history", options->history, "the history file --baseline reads")->capture_default_str();
  cmd->add_option("-t,--threshold", options->compare.threshold,
                  "relative change that counts as a regression (0.05 = 5%)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("-m,--metric", options->metrics,
                  fmt::format("metrics that decide the exit status (repeatable; default: {}); known: {}",
                              fmt::join(kDefaultGatingMetrics, ", "), fmt::join(compare_metric_names(), ", ")))
      ->allow_extra_args(false);  // one name per --metric, so BASE and CUR may follow
  cmd->add_option("--skip", options->skip,
                  "warm-up steps to leave out of each run (default: the steps analysis's rule, "
                  "clamp(N/10, 1, 10))");
  cmd->add_option("--confidence", options->compare.bootstrap.confidence, "confidence of intervals and tests")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 0.999));
  cmd->add_option("--resamples", options->compare.bootstrap.resamples, "bootstrap resamples and permutations")
      ->capture_default_str()
      ->check(CLI::Range(100, 1000000));
  cmd->add_option("--seed", options->compare.bootstrap.seed, "seed of the resampling")->capture_default_str();
  cmd->add_option("--top", options->compare.top, "rows of the function, operator and kernel tables")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "machine-readable JSON (format stepscope.compare/1)");
  cmd->add_flag("--markdown", options->markdown, "Markdown for a pull-request comment or CI job summary");
  add_window_option(cmd, options->window);
  cmd->add_option("-o,--output", options->output, "output file, or - for standard output")->capture_default_str();
  cmd->footer(
      "Exit status: 0 no regression, 1 a regression, 2 bad input.\n"
      "Examples:\n  stepscope compare before.db after.db\n"
      "  stepscope compare base.db cur.db --threshold 0.03 --metric samples_per_sec --markdown\n"
      "  stepscope compare --baseline last cur.db");
  return [options] { return run_compare(*options); };
}

}  // namespace stepscope::cli
