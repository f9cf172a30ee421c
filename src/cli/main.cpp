// stepscope: record, explain and compare the performance of ML training runs.
#include <cstdio>
#include <cstring>
#include <map>
#include <new>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "renderers/escape.hpp"
#include "util/bus_error.hpp"
#include "util/error.hpp"

namespace {

struct CommandEntry {
  const char* name;  // as its add_*_command registers it (checked there)
  stepscope::cli::Command (*add)(CLI::App&);
};

constexpr CommandEntry kCommands[] = {
    {"record", stepscope::cli::add_record_command},   {"dump", stepscope::cli::add_dump_command},
    {"report", stepscope::cli::add_report_command},   {"import", stepscope::cli::add_import_command},
    {"export", stepscope::cli::add_export_command},   {"monitor", stepscope::cli::add_monitor_command},
    {"compare", stepscope::cli::add_compare_command}, {"sweep", stepscope::cli::add_sweep_command},
    {"history", stepscope::cli::add_history_command}, {"mlflow", stepscope::cli::add_mlflow_command},
};

// Whether the command line needs the command `name` set up. Setting up a
// command's options costs CLI11 some allocations each (all ten: ~0.3 ms, a
// sixth of `--version`), so a command line that names one (`stepscope record
// ...`) sets up that one alone, and a bare `--version` none; anything else
// (help, a typo, no command) sets up all of them, so help and errors list
// them all.
bool needs_command(const char* name, int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) return false;
  if (argc < 2) return true;
  for (const CommandEntry& entry : kCommands) {
    if (std::strcmp(argv[1], entry.name) == 0) return std::strcmp(argv[1], name) == 0;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stepscope;
  exit_cleanly_on_bus_error();
  CLI::App app{"stepscope: why is my training step slow, and did my change make it faster?"};
  app.set_version_flag("--version", fmt::format("stepscope {}", STEPSCOPE_VERSION));
  app.require_subcommand(1);

  std::map<const CLI::App*, cli::Command> commands;
  for (const CommandEntry& entry : kCommands) {
    if (!needs_command(entry.name, argc, argv)) continue;
    cli::Command run = entry.add(app);
    const CLI::App* added = app.get_subcommands({}).back();
    if (added->get_name() != entry.name) {  // the table and the command disagree: a bug
      fmt::print(stderr, "stepscope: internal error: command {} registered as {}\n", entry.name, added->get_name());
      return 3;
    }
    commands[added] = std::move(run);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error is bad input, status 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const CLI::App* sub : app.get_subcommands()) return commands.at(sub)();
  } catch (const InputError& e) {
    // Messages quote pieces of the input (keys, names): keep them inert.
    fmt::print(stderr, "stepscope: error: {}\n", printable_utf8(e.what()));
    return 2;
  } catch (const std::bad_alloc&) {
    // Past what cli/input.cpp weighs before reading: the analyses' own
    // memory, or an address-space limit (ulimit -v).
    fmt::print(stderr,
               "stepscope: error: out of memory (the machine's, or a limit: ulimit -v, ulimit -d, a cgroup's); "
               "read a part of the run with --window\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepscope: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
