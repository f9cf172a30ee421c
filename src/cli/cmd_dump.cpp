// stepscope dump --pid PID [--json] [--native] [-o FILE]: the current Python stack of
// every thread of every Python process in the tree under PID, each rank's
// place in its job and torch's Flight Recorder where the hooks are in it. The
// first thing to run on a hung training job; when the tree holds every rank,
// the verdict on the hang comes with it.
#include <unistd.h>

#include <iostream>

#include "analyses/collective_hang.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "collectors/stack_snapshot.hpp"
#include "renderers/report/hang_text.hpp"
#include "renderers/stack_snapshot.hpp"

namespace stepscope::cli {

namespace {

struct DumpOptions {
  pid_t pid = 0;
  bool json = false;
  bool native = false;
  std::string output = "-";
};

int run_dump(const DumpOptions& options) {
  Dump dump = snapshot_tree(options.pid, options.native);
  write_output(options.output, [&](std::ostream& out) {
    if (options.json) {
      write_dump_json(dump, out);
    } else {
      write_dump_text(dump, out);
    }
  });
  // The verdict goes where a person reads: after the stacks, or on the
  // terminal when the dump went to a file.
  if (holds_whole_job(dump) && (!options.json || options.output != "-")) {
    std::ostream& out = std::cout;
    if (options.output == "-") out << '\n';
    write_hang_verdict(analyse_hang({dump}), TextStyle(false), out);
  }
  return 0;
}

}  // namespace

Command add_dump_command(CLI::App& app) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dump", "Print the current Python stack of every thread of a process tree (hung jobs)");
  cmd->add_option("-p,--pid", options->pid, "the root of the process tree")->required();
  cmd->add_flag("--json", options->json, "one JSON document (format stepscope.dump/1) instead of text");
  cmd->add_flag("--native", options->native,
                "show the native (C/C++) frames of threads on a CPU among their Python frames, through "
                "perf events: the program is never stopped");
  cmd->add_option("-o,--output", options->output,
                  "output file, or - for standard output; `report` reads the dumps of a job's nodes")
      ->capture_default_str();
  return [options] { return run_dump(*options); };
}

}  // namespace stepscope::cli
