// stepscope: record, explain and compare the performance of ML training runs.
#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "renderers/escape.hpp"
#include "util/bus_error.hpp"
#include "util/error.hpp"

int main(int argc, char** argv) {
  using namespace stepscope;
  exit_cleanly_on_bus_error();
  CLI::App app{"stepscope: why is my training step slow, and did my change make it faster?"};
  app.set_version_flag("--version", fmt::format("stepscope {}", STEPSCOPE_VERSION));
  app.require_subcommand(1);

  std::map<const CLI::App*, cli::Command> commands;
  auto add = [&](cli::Command (*register_command)(CLI::App&)) {
    cli::Command run = register_command(app);
    commands[app.get_subcommands({}).back()] = std::move(run);
  };
  add(cli::add_record_command);
  add(cli::add_dump_command);
  add(cli::add_report_command);
  add(cli::add_import_command);
  add(cli::add_export_command);
  add(cli::add_monitor_command);
  add(cli::add_compare_command);
  add(cli::add_sweep_command);
  add(cli::add_history_command);

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
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepscope: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
