// stepscope history [DB] [--json] [-o OUT]
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "history/history_db.hpp"
#include "renderers/compare/history_json.hpp"
#include "renderers/compare/history_text.hpp"

namespace stepscope::cli {

namespace {

struct HistoryOptions {
  std::string path = kDefaultHistoryPath;
  std::string output = "-";
  bool json = false;
};

int run_history(const HistoryOptions& options) {
  HistoryDb db(options.path, HistoryDb::Mode::kReadExisting);
  std::vector<HistoryEntry> entries = db.entries();
  write_output(options.output, [&](std::ostream& out) {
    if (options.json) {
      write_history_json(entries, out);
    } else {
      write_history_text(entries, out);
    }
  });
  return 0;
}

}  // namespace

Command add_history_command(CLI::App& app) {
  auto options = std::make_shared<HistoryOptions>();
  CLI::App* cmd = app.add_subcommand("history", "List the runs recorded with record --history");
  cmd->add_option("db", options->path, "the history file")->capture_default_str();
  cmd->add_flag("--json", options->json, "machine-readable JSON (format stepscope.history/1)");
  cmd->add_option("-o,--output", options->output, "output file, or - for standard output")->capture_default_str();
  return [options] { return run_history(*options); };
}

}  // namespace stepscope::cli
