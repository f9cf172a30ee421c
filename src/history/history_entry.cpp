#include "history/history_entry.hpp"

#include <cstdio>
#include <cstdlib>

#include "analyses/compare/statistics.hpp"

namespace stepscope {

namespace {

constexpr double kNsPerSec = 1e9;

std::optional<double> steady_rate(const std::vector<StepRecord>& steps, int64_t StepRecord::*field) {
  std::vector<RatioPoint> points;
  for (const StepRecord& s : steps) {
    if (!s.warmup && s.*field >= 0 && s.time_ns() > 0) {
      points.push_back({static_cast<double>(s.*field), static_cast<double>(s.time_ns()) / kNsPerSec});
    }
  }
  if (points.empty()) return std::nullopt;
  return ratio_of_sums(points);
}

std::optional<int64_t> peak(const std::vector<StepRecord>& steps, int64_t StepRecord::*field) {
  std::optional<int64_t> best;
  for (const StepRecord& s : steps) {
    if (s.*field >= 0) best = std::max(best.value_or(0), s.*field);
  }
  return best;
}

std::string metadata(const Run& run, const char* key) {
  auto it = run.metadata.find(key);
  return it == run.metadata.end() ? std::string() : it->second;
}

// The first line a command prints, without its newline; empty when it fails.
std::string first_line_of(const char* command) {
  FILE* pipe = popen(command, "r");
  if (!pipe) return {};
  char buffer[256] = {};
  std::string line = fgets(buffer, sizeof buffer, pipe) ? buffer : "";
  int status = pclose(pipe);
  if (status != 0) return {};
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace

HistoryEntry history_entry(const Run& run, const RunSteps& steps, const RunIdentity& identity) {
  HistoryEntry e;
  std::string start = metadata(run, "start_unix_ns");
  e.recorded_unix_ns = start.empty() ? 0 : std::strtoll(start.c_str(), nullptr, 10);
  e.command = metadata(run, "command");
  e.host = metadata(run, "host");
  e.git_commit = identity.git_commit;
  e.config = identity.config;
  e.run_file = identity.run_file;
  e.exit_status = identity.exit_status;
  e.steps_origin = steps.origin;
  e.has_phases = steps.has_phases;
  e.steps = steps.steps.size();
  int64_t steady_ns = 0;
  size_t steady = 0;
  for (const StepRecord& s : steps.steps) {
    if (s.warmup) {
      ++e.warmup_steps;
    } else {
      steady_ns += s.time_ns();
      ++steady;
    }
  }
  if (steady > 0) e.step_time_mean_ms = static_cast<double>(steady_ns) / 1e6 / static_cast<double>(steady);
  e.samples_per_sec = steady_rate(steps.steps, &StepRecord::samples);
  e.tokens_per_sec = steady_rate(steps.steps, &StepRecord::tokens);
  e.peak_host_bytes = peak(steps.steps, &StepRecord::host_peak_bytes);
  e.peak_device_bytes = peak(steps.steps, &StepRecord::device_peak_bytes);
  return e;
}

std::string current_git_commit() {
  if (const char* sha = std::getenv("GITHUB_SHA"); sha && *sha) return sha;
  std::string head = first_line_of("git rev-parse HEAD 2>/dev/null");
  if (head.empty()) return {};
  // `git diff --quiet` exits 1 when tracked files differ from HEAD.
  int dirty = std::system("git diff --quiet HEAD >/dev/null 2>&1");
  return dirty == 0 ? head : head + "-dirty";
}

}  // namespace stepscope
