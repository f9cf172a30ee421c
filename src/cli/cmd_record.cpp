// stepscope record -o RUN.db [--rate HZ] [--duration S] [--idle] [--native] [--gpu MODE] [--max-size SIZE]
//   [--history[=DB]] [--metrics [ADDR:]PORT] [--metrics-textfile PATH] [--mlflow [--tracking-uri URI]
//   [--experiment NAME] [--run-name NAME]] [--pid PID | -- CMD ARGS...]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/history_append.hpp"
#include "cli/input.hpp"
#include "cli/mlflow_upload.hpp"
#include "collectors/recorder.hpp"
#include "history/history_db.hpp"
#include "publish/metrics_publisher.hpp"
#include "run/run_trimmer.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

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

// --max-size's bytes (0 when not given), checked before anything starts.
uint64_t max_size_bytes(const std::optional<std::string>& given) {
  if (!given) return 0;
  const std::string& text = *given;
  std::optional<uint64_t> bytes = parse_byte_size(text);
  if (!bytes) {
    throw InputError(fmt::format("record --max-size {}: not a size (bytes, or a number with K, M or G, powers of "
                                 "1024: 500M, 2G)", text));
  }
  if (*bytes < kSmallestRunSizeLimit) {
    throw InputError(fmt::format("record --max-size {}: below the least limit, {}", text,
                                 describe_byte_size(kSmallestRunSizeLimit)));
  }
  return *bytes;
}

// Publishes live metrics while recording, when asked to: the publisher lives
// as long as the recording.
std::unique_ptr<MetricsPublisher> start_metrics(const MetricsOptions& metrics, RecordOptions& options) {
  if (metrics.listen.empty() && metrics.textfile.empty()) return nullptr;
  auto publisher = std::make_unique<MetricsPublisher>(metrics);
  if (!metrics.listen.empty()) {
    fmt::print(stderr, "stepscope: serving metrics on http://{}/metrics\n", publisher->address());
  }
  options.on_commit = [p = publisher.get()](const Run& run, const SamplerStats& stats, int64_t now, bool last) {
    p->update(run, stats, now, last);
  };
  return publisher;
}

}  // namespace

Command add_record_command(CLI::App& app) {
  auto options = std::make_shared<RecordOptions>();
  auto history = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "record", "Record the Python stacks of a command (or a running process) and its whole "
                "process tree");
  cmd->add_option("-o,--output", options->output,
                  "run file to write (RUN.db); {host}, {node_rank} and {job} take this node's values, so one "
                  "command line serves every node of a job")
      ->required();
  cmd->add_option("-r,--rate", options->rate_hz, "samples per second")->capture_default_str();
  cmd->add_option("-d,--duration", options->duration_s,
                  "stop after this many seconds (default: when the command exits)");
  cmd->add_flag("--idle", options->idle,
                "include idle threads in profiles (they are always recorded, marked idle)");
  cmd->add_flag("--native", options->native,
                "also record the native (C/C++) frames of threads on a CPU, merged with their Python "
                "frames, through perf events: the program is never stopped");
  auto gpu = std::make_shared<std::string>("auto");
  cmd->add_option("--gpu", *gpu,
                  "collect GPU activity (kernels, copies, CUDA calls) through CUPTI: auto (when "
                  "stepscope was built with CUPTI and the machine has a CUDA driver), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  auto max_size = std::make_shared<std::string>();
  cmd->add_option("--max-size", *max_size,
                  "keep the run file under SIZE (bytes, or with K, M or G: 500M, 2G; at least 1M) by dropping its "
                  "oldest samples, spans and counter values, as a job that runs for days needs (default: no limit)");
  cmd->add_option("-p,--pid", options->attach_pid,
                  "attach to a running process and its descendants instead of launching");
  cmd->add_flag(fmt::format("--history{{{}}}", kDefaultHistoryPath), *history,
                  fmt::format("append the run's summary and steps to the run history {} (--history=DB: another file)",
                              kDefaultHistoryPath));
  auto metrics = std::make_shared<MetricsOptions>();
  cmd->add_option("--metrics", metrics->listen,
                  "serve live step metrics for Prometheus at http://[ADDR:]PORT/metrics while recording "
                  "(ADDR defaults to every interface; PORT 0 picks a free one)");
  cmd->add_option("--metrics-textfile", metrics->textfile,
                  "write the same metrics to this file every 2 s, for node_exporter's textfile collector "
                  "(name it *.prom)");
  auto mlflow = std::make_shared<MlflowTarget>();
  auto use_mlflow = std::make_shared<bool>(false);
  CLI::Option* mlflow_flag = cmd->add_flag(
      "--mlflow", *use_mlflow,
      "when the recording ends, log it to an MLflow tracking server as `stepscope mlflow` does "
                  "(the server and experiment are checked before the command starts)");
  for (CLI::Option* option : add_mlflow_options(cmd, *mlflow, " (with --mlflow)")) option->needs(mlflow_flag);
  cmd->add_option("command", options->command, "the command to run, after --");
  cmd->footer(
      "Examples:\n  stepscope record -o run.db -- python train.py --epochs 1\n"
      "  stepscope record -o run.db --pid 1234 --duration 30\n"
      "  stepscope record -o run.db --max-size 500M -- python train.py   # keeps the newest 500 MiB\n"
      "  stepscope record -o run.db --metrics 9101 -- torchrun --nproc-per-node 8 train.py\n"
      "  stepscope record -o 'runs/{job}-node{node_rank}.db' -- torchrun --nnodes 2 --node-rank $NODE_RANK ...\n"
      "In launch mode stepscope exits with the command's exit status.");
  return [options, gpu, max_size, history, metrics, use_mlflow, mlflow, cmd] {
    options->max_size_bytes = max_size_bytes(cmd->count("--max-size") ? std::optional(*max_size) : std::nullopt);
    const std::map<std::string, GpuMode> modes = {{"auto", GpuMode::kAuto}, {"on", GpuMode::kOn}, {"off", GpuMode::kOff}};
    options->gpu = modes.at(*gpu);
    options->job = job_identity(options->command, this_process_environment(), this_host());
    options->output = expand_output_path(options->output, options->job);
    metrics->job = options->job.job;
    std::unique_ptr<MlflowUpload> upload;
    if (*use_mlflow) upload = std::make_unique<MlflowUpload>(*mlflow);
    std::unique_ptr<MetricsPublisher> publisher = start_metrics(*metrics, *options);
    RecordSummary summary = record(*options);
    if (publisher) {
      publisher->wait_for_final_scrape();
      for (const std::string& note : publisher->notes()) summary.notes.push_back(note);
    }
    print_summary(*options, summary);
    if (cmd->count("--history") == 0 && !upload) return summary.exit_status;
    // Read as `report` reads it: a run too large for the memory at hand is
    // refused with a window that fits, the file left as recorded.
    Run run = open_run_or_trace(options->output);
    if (cmd->count("--history") > 0) {
      std::string path = history->empty() ? kDefaultHistoryPath : *history;
      append_to_history(path, options->output, run, fmt::format("{{\"rate_hz\": {}}}", options->rate_hz),
                        summary.exit_status);
    }
    if (upload) upload->upload(options->output, run);
    return summary.exit_status;
  };
}

}  // namespace stepscope::cli
