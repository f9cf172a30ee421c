#include "renderers/compare/history_json.hpp"

#include <string>

#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

void append_entry(std::string& out, const HistoryEntry& e) {
  JsonObject o(out);
  o.number("id", e.id).number("started_unix_ns", e.recorded_unix_ns).text("command", e.command);
  o.text_or_null("git_commit", e.git_commit).text("host", e.host).text("config", e.config);
  o.text("run_file", e.run_file).number("exit_status", e.exit_status).text("steps_origin", e.steps_origin);
  o.number("steps", e.steps).number("warmup_steps", e.warmup_steps);
  o.number_or_null("samples_per_sec", e.samples_per_sec);
  o.number_or_null("tokens_per_sec", e.tokens_per_sec);
  o.number_or_null("step_time_mean_ms", e.step_time_mean_ms);
  o.number_or_null("peak_host_bytes", e.peak_host_bytes);
  o.number_or_null("peak_device_bytes", e.peak_device_bytes);
}

}  // namespace

void write_history_json(const std::vector<HistoryEntry>& entries, std::ostream& out) {
  std::string s;
  {
    JsonObject o(s);
    o.text("format", "stepscope.history/1");
    o.field("runs");
    append_json_array(s, entries, append_entry);
  }
  out << s << '\n';
}

}  // namespace stepscope
