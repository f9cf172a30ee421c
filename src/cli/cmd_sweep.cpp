// stepscope sweep --param NAME=v1,v2 [--param ...] [--repeat N] [-o DIR] [--history [DB]] -- CMD ... {NAME} ...
#include <cstdio>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "analyses/compare/steps.hpp"
#include "analyses/compare/sweep.hpp"
#include "cli/commands.hpp"
#include "cli/history_append.hpp"
#include "cli/output.hpp"
#include "collectors/recorder.hpp"
#include "history/history_db.hpp"
#include "renderers/compare/sweep_html.hpp"
#include "renderers/compare/sweep_text.hpp"
#include "renderers/escape.hpp"
#include "run/run_file.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

struct SweepOptions {
  std::vector<std::string> params;  // NAME=v1,v2,...
  size_t repeat = 1;
  std::string output_dir = "sweep";
  double rate_hz = 100;
  std::string history;
  bool with_history = false;
  std::vector<std::string> command;
  BootstrapOptions bootstrap;
};

struct Param {
  std::string name;
  std::vector<std::string> values;
};

Param parse_param(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == text.size()) {
    throw InputError(fmt::format("--param {}: expected NAME=v1,v2,...", text));
  }
  Param p{text.substr(0, eq), {}};
  std::string values = text.substr(eq + 1);
  for (size_t start = 0;;) {
    size_t comma = values.find(',', start);
    p.values.push_back(values.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return p;
}

using Setting = std::vector<std::pair<std::string, std::string>>;

// Every combination of the parameters' values, the first parameter slowest.
std::vector<Setting> combinations(const std::vector<Param>& params) {
  std::vector<Setting> out{{}};
  for (const Param& p : params) {
    std::vector<Setting> next;
    for (const Setting& s : out) {
      for (const std::string& v : p.values) {
        Setting grown = s;
        grown.emplace_back(p.name, v);
        next.push_back(std::move(grown));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string substitute(std::string arg, const Setting& setting) {
  for (const auto& [name, value] : setting) {
    std::string placeholder = "{" + name + "}";
    for (size_t at = arg.find(placeholder); at != std::string::npos; at = arg.find(placeholder, at + value.size())) {
      arg.replace(at, placeholder.size(), value);
    }
  }
  return arg;
}

std::string label_of(const Setting& setting) {
  std::string out;
  for (const auto& [name, value] : setting) out += (out.empty() ? "" : " ") + name + "=" + value;
  return out;
}

std::string config_of(const Setting& setting) {
  std::string out = "{";
  for (const auto& [name, value] : setting) {
    if (out.size() > 1) out += ", ";
    append_json_string(out, name);
    out += ": ";
    append_json_string(out, value);
  }
  return out + "}";
}

// A file name from the setting: letters, digits, '.', '-' kept, the rest '_'.
std::string file_stem(size_t index, const Setting& setting) {
  std::string out = fmt::format("{:02}", index);
  for (const auto& [name, value] : setting) {
    out += "_" + name + "-" + value;
  }
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out.substr(0, 120);
}

void check_placeholders(const std::vector<Param>& params, const std::vector<std::string>& command) {
  for (const Param& p : params) {
    bool used = false;
    for (const std::string& arg : command) used = used || arg.find("{" + p.name + "}") != std::string::npos;
    if (!used) throw InputError(fmt::format("--param {}: the command has no {{{}}} to put its values in", p.name, p.name));
  }
}

int run_sweep(const SweepOptions& options) {
  if (options.command.empty()) throw InputError("sweep needs a command after --");
  if (options.params.empty()) throw InputError("sweep needs at least one --param NAME=v1,v2,...");
  if (options.repeat == 0) throw InputError("--repeat must be at least 1");
  std::vector<Param> params;
  for (const std::string& text : options.params) params.push_back(parse_param(text));
  check_placeholders(params, options.command);
  std::error_code ec;
  std::filesystem::create_directories(options.output_dir, ec);
  if (ec) throw InputError(fmt::format("cannot create {}: {}", options.output_dir, ec.message()));

  std::vector<SweepSettingRuns> settings;
  std::vector<Setting> all = combinations(params);
  bool any_failed = false;
  for (size_t i = 0; i < all.size(); ++i) {
    SweepSettingRuns& runs = settings.emplace_back();
    runs.label = label_of(all[i]);
    for (size_t k = 0; k < options.repeat; ++k) {
      RecordOptions record_options;
      record_options.rate_hz = options.rate_hz;
      record_options.output = fmt::format("{}/{}.r{}.db", options.output_dir, file_stem(i, all[i]), k + 1);
      for (const std::string& arg : options.command) record_options.command.push_back(substitute(arg, all[i]));
      fmt::print(stderr, "stepscope: sweep {}/{}: {} (run {} of {})\n", i + 1, all.size(), runs.label, k + 1,
                 options.repeat);
      RecordSummary summary = record(record_options);
      Run run = load_run(record_options.output);
      RunSteps steps = run_steps(run);
      if (summary.exit_status != 0 || steps.steps.empty()) {
        fmt::print(stderr, "stepscope: sweep: {} {}; left out\n", record_options.output,
                   summary.exit_status != 0 ? fmt::format("exited with status {}", summary.exit_status)
                                            : std::string("recorded no steps"));
        ++runs.failed_runs;
        any_failed = true;
        continue;
      }
      if (options.with_history) {
        append_to_history(options.history.empty() ? kDefaultHistoryPath : options.history, record_options.output,
                          run, config_of(all[i]), summary.exit_status);
      }
      runs.repeats.push_back(std::move(steps.steps));
    }
  }
  SweepResult result = summarize_sweep(settings, options.bootstrap);
  std::string joined;
  for (const std::string& arg : options.command) joined += (joined.empty() ? "" : " ") + arg;
  std::string chart = options.output_dir + "/sweep.html";
  write_output(chart, [&](std::ostream& out) { write_sweep_html(result, joined, out); });
  write_output("-", [&](std::ostream& out) { write_sweep_text(result, out); });
  fmt::print(stderr, "stepscope: sweep: runs and chart ({}) in {}\n", chart, options.output_dir);
  return any_failed ? 1 : 0;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Record one command under several settings and compare throughput and memory with intervals");
  cmd->add_option("-p,--param", options->params, "NAME=v1,v2,...: values put in place of {NAME} in the command (repeatable)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--repeat", options->repeat, "runs per setting")->capture_default_str();
  cmd->add_option("-o,--output-dir", options->output_dir, "folder for the runs and sweep.html")
      ->capture_default_str();
  cmd->add_option("-r,--rate", options->rate_hz, "samples per second of each recording")->capture_default_str();
  cmd->add_flag(fmt::format("--history{{{}}}", kDefaultHistoryPath), options->history,
                  fmt::format("also append each run to the run history {} (--history=DB: another file)", kDefaultHistoryPath));
  cmd->add_option("--confidence", options->bootstrap.confidence, "confidence of the intervals")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 0.999));
  cmd->add_option("command", options->command, "the command to run, after --, with {NAME} placeholders");
  cmd->footer(
      "Example:\n  stepscope sweep --param workers=0,2,4,8 --repeat 2 -- python train.py --num-workers {workers}\n"
      "Same seed, data and steps in every setting are the command's responsibility.\n"
      "Exit status: 0, or 1 when a run failed or recorded no steps.");
  return [options, cmd] {
    options->with_history = cmd->count("--history") > 0;
    return run_sweep(*options);
  };
}

}  // namespace stepscope::cli
