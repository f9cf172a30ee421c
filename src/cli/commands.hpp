// Each subcommand registers its options on the CLI11 app and returns the
// function that runs it. main.cpp only wires them together.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace stepscope::cli {

using Command = std::function<int()>;

Command add_record_command(CLI::App& app);
Command add_dump_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_import_command(CLI::App& app);
Command add_monitor_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_history_command(CLI::App& app);
Command add_mlflow_command(CLI::App& app);

}  // namespace stepscope::cli
