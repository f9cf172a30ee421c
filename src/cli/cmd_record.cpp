// stepscope record -o RUN.db [--rate HZ] [--duration S] [--idle] [--gpu MODE] [--history[=DB]] [--pid PID | -- CMD ARGS...]
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/history_append.hpp"
#include "collectors/recorder.hpp"
#include "history/history_db.hpp"
#include "run/run_file.hpp"

namespace stepscope::cli {

namespace {

void print_summary(const RecordOptions& options, const RecordSummary& s) {
  // Of the reads that could have given samples: with several processes a
  // round makes several, and one failed read loses one process's samples.
  double error_rate = s.stats.process_reads ? 100.0 * static_cast<double>(s.stats.error_samples) /
                                                  static_cast<double>(s.stats.process_reads)
                                            : 0;
  fmt::print(stderr,
             "stepscope: recorded {:.1f} s: {} samples in {} rounds ({:.1f} Hz), {} processes "
             "({} Python), {:.2f}% error samples; run written to {}\n",
             s.seconds, s.stats.samples, s.stats.rounds, s.effective_rate_hz, s.processes,
             s.stats.python_processes, error_rate, options.output);
  if (s.late_rounds > 0) {
    fmt::print(stderr,
               "stepscope: sampling fell behind {} times: the machine could not keep {} Hz; "
               "the run's period reflects the rate actually reached\n",
               s.late_rounds, options.rate_hz);
  }
  for (const std::string& note : s.notes) fmt::print(stderr, "stepscope: {}\n", note);
}

}  // namespace

Command add_record_command(CLI::App& app) {
  auto options = std::make_shared<RecordOptions>();
  auto history = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "record", "Record the Python stacks of a command (or a running process) and its whole "
                "process tree");
  cmd->add_option("-o,--output", options->output, "run file to write (RUN.db)")->required();
  cmd->add_option("-r,--rate", options->rate_hz, "samples per second")->capture_default_str();
  cmd->add_option("-d,--duration", options->duration_s,
                  "stop after this many seconds (default: when the command exits)");
  cmd->add_flag("--idle", options->idle,
                "include idle threads in profiles (they are always recorded, marked idle)");
  auto gpu = std::make_shared<std::string>("auto");
  cmd->add_option("--gpu", *gpu,
                  "collect GPU activity (kernels, copies, CUDA calls) through CUPTI: auto (when "
                  "stepscope was built with CUPTI and the machine has a CUDA driver), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("-p,--pid", options->attach_pid,
                  "attach to a running process and its descendants instead of launching");
  cmd->add_flag(fmt::format("--history{{{}}}", kDefaultHistoryPath), *history,
                  fmt::format("append the run's summary and steps to the run history {} (--history=DB: another file)",
                              kDefaultHistoryPath));
  cmd->add_option("command", options->command, "the command to run, after --");
  cmd->footer(
      "Examples:\n  stepscope record -o run.db -- python train.py --epochs 1\n"
      "  stepscope record -o run.db --pid 1234 --duration 30\n"
      "In launch mode stepscope exits with the command's exit status.");
  return [options, gpu, history, cmd] {
    const std::map<std::string, GpuMode> modes = {{"auto", GpuMode::kAuto}, {"on", GpuMode::kOn}, {"off", GpuMode::kOff}};
    options->gpu = modes.at(*gpu);
    RecordSummary summary = record(*options);
    print_summary(*options, summary);
    if (cmd->count("--history") > 0) {
      std::string path = history->empty() ? kDefaultHistoryPath : *history;
      append_to_history(path, options->output, load_run(options->output),
                        fmt::format("{{\"rate_hz\": {}}}", options->rate_hz), summary.exit_status);
    }
    return summary.exit_status;
  };
}

}  // namespace stepscope::cli
