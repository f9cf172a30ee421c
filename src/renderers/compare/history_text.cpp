#include "renderers/compare/history_text.hpp"

#include <ctime>

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

std::string utc_time(int64_t unix_ns) {
  std::time_t seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

template <typename T>
std::string or_dash(const std::optional<T>& value, double scale, const char* format) {
  return value ? fmt::format(fmt::runtime(format), static_cast<double>(*value) * scale) : "-";
}

}  // namespace

void write_history_text(const std::vector<HistoryEntry>& entries, std::ostream& out) {
  if (entries.empty()) {
    out << "no runs in the history\n";
    return;
  }
  out << fmt::format("{:>4}  {:<19}  {:<12}  {:<12}  {:>6}  {:>12}  {:>10}  {:>10}  {}\n", "id", "started (UTC)",
                     "commit", "host", "steps", "samples/s", "step ms", "peak MiB", "command");
  for (const HistoryEntry& e : entries) {
    out << fmt::format("{:>4}  {:<19}  {:<12}  {:<12}  {:>6}  {:>12}  {:>10}  {:>10}  {}\n", e.id,
                       utc_time(e.recorded_unix_ns), printable_utf8(e.git_commit.substr(0, 12)),
                       printable_utf8(e.host.substr(0, 12)), e.steps, or_dash(e.samples_per_sec, 1, "{:.1f}"),
                       or_dash(e.step_time_mean_ms, 1, "{:.2f}"),
                       or_dash(e.peak_host_bytes, 1.0 / (1024 * 1024), "{:.1f}"), printable_utf8(e.command));
  }
}

}  // namespace stepscope
