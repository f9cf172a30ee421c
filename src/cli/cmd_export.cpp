// stepscope export RUN.db|TRACE... --format collapsed|speedscope|svg|perfetto|pprof [--window W] -o OUT
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "analyses/profile.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/output.hpp"
#include "renderers/export/collapsed.hpp"
#include "renderers/export/flamegraph_svg.hpp"
#include "renderers/export/job_timeline.hpp"
#include "renderers/export/perfetto.hpp"
#include "renderers/export/pprof.hpp"
#include "renderers/export/speedscope.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

enum class ExportFormat { kCollapsed, kSpeedscope, kSvg, kPerfetto, kPprof };

struct ExportOptions {
  std::vector<std::string> inputs;
  ExportFormat format = ExportFormat::kCollapsed;
  std::string output = "-";
  std::string title;
  bool idle = false;
  std::string window;
};

// The runs of a job on one timeline, read one at a time (docs/jobs.md).
int export_job(const ExportOptions& options, const std::vector<std::string>& inputs) {
  PerfettoFile file;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Run run = open_run_or_trace(inputs[i], {.flows = true}, options.window);
    std::string note = place_on_job_timeline(run, i);
    if (!note.empty()) fmt::print(stderr, "stepscope: {}: {}\n", inputs[i], note);
    file.add(run, {.include_idle = options.idle || run_wants_idle(run)});
  }
  write_output(options.output, [&](std::ostream& out) { file.write(out); });
  return 0;
}

int run_export(const ExportOptions& options) {
  const bool whole_run = options.format == ExportFormat::kPerfetto;  // not its stack profile
  const std::vector<std::string> inputs = expand_inputs(options.inputs);
  if (inputs.size() > 1) {
    if (!whole_run) throw InputError("export: several runs go only into one Perfetto timeline (--format perfetto)");
    return export_job(options, inputs);
  }
  const std::string& input = inputs.front();
  // Flows become the Perfetto export's arrows; the profiles read none.
  Run run = open_run_or_trace(input, {.flows = whole_run}, options.window);
  if (whole_run) {
    bool include_idle = options.idle || run_wants_idle(run);
    write_output(options.output, [&](std::ostream& out) { write_perfetto(run, out, {.include_idle = include_idle}); });
    return 0;
  }
  ProfileOptions profile_options{.include_idle = options.idle || run_wants_idle(run)};
  Profile profile = build_profile(run, profile_options);
  write_output(options.output, [&](std::ostream& out) {
    switch (options.format) {
      case ExportFormat::kCollapsed:
        write_collapsed(run, profile, out);
        break;
      case ExportFormat::kSpeedscope:
        write_speedscope(run, profile, profile_options, out);
        break;
      case ExportFormat::kSvg: {
        FlamegraphOptions svg;
        svg.title = options.title.empty() ? input : options.title;
        write_flamegraph_svg(run, profile, out, svg);
        break;
      }
      case ExportFormat::kPprof:
        write_pprof(run, profile, profile_options, out);
        break;
      case ExportFormat::kPerfetto:
        break;  // written above
    }
  });
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "Convert a run or trace to another tool's format");
  cmd->add_option("input", options->inputs,
                  "run file (RUN.db) or trace (.json, .json.gz); with --format perfetto, several (or a directory): "
                  "the runs of a job on one wall-clock timeline")
      ->required();
  const std::map<std::string, ExportFormat> formats = {{"collapsed", ExportFormat::kCollapsed},
                                                       {"speedscope", ExportFormat::kSpeedscope},
                                                       {"svg", ExportFormat::kSvg},
                                                       {"perfetto", ExportFormat::kPerfetto},
                                                       {"pprof", ExportFormat::kPprof}};
  cmd->add_option("-f,--format", options->format,
                  "collapsed: folded stacks for flamegraph.pl/inferno; speedscope: "
                  "speedscope.app JSON; svg: interactive flame graph; perfetto: Chrome/Perfetto "
                  "trace JSON (samples, spans, counters, flows) for ui.perfetto.dev; pprof: gzipped "
                  "profile.proto for go tool pprof, Pyroscope, Parca")
      ->required()
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));
  cmd->add_option("-o,--output", options->output, "output file, or - for standard output")
      ->capture_default_str();
  cmd->add_option("--title", options->title, "title of the SVG flame graph (default: input path)");
  add_window_option(cmd, options->window);
  cmd->add_flag("--idle", options->idle,
                "include samples of idle threads (default: only when recorded with --idle)");
  return [options] { return run_export(*options); };
}

}  // namespace stepscope::cli
