// stepscope dump --pid PID [--json]: the current Python stack of every
// thread of every Python process in the tree under PID. The first thing to
// run on a hung training job (NCCL or DataLoader hangs).
#include <iostream>

#include "cli/commands.hpp"
#include "collectors/stack_snapshot.hpp"
#include "renderers/stack_snapshot.hpp"

namespace stepscope::cli {

namespace {

struct DumpOptions {
  pid_t pid = 0;
  bool json = false;
};

int run_dump(const DumpOptions& options) {
  std::vector<ProcessSnapshot> processes = snapshot_tree(options.pid);
  if (options.json) {
    write_stack_snapshot_json(processes, std::cout);
  } else {
    write_stack_snapshot_text(processes, std::cout);
  }
  return 0;
}

}  // namespace

Command add_dump_command(CLI::App& app) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dump", "Print the current Python stack of every thread of a process tree (hung jobs)");
  cmd->add_option("-p,--pid", options->pid, "the root of the process tree")->required();
  cmd->add_flag("--json", options->json, "one JSON document instead of text");
  return [options] { return run_dump(*options); };
}

}  // namespace stepscope::cli
