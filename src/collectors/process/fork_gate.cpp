#include "collectors/process/fork_gate.hpp"

#include <array>
#include <span>

#include "collectors/process/proc_text.hpp"

namespace stepscope {

namespace {

// After a change, the tree is walked at that read and at the next: a child
// whose pid the first read saw may not have been linked to its parent yet.
constexpr int kWalksAfterAChange = 2;

}  // namespace

std::optional<PidCounters> parse_loadavg_pids(std::string_view text) {
  std::array<std::string_view, 6> fields;
  if (split_fields(text, std::span<std::string_view>(fields)) != 5) return std::nullopt;
  std::string_view running_tasks = fields[3];
  const size_t slash = running_tasks.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view last_pid = fields[4];
  if (!last_pid.empty() && last_pid.back() == '\n') last_pid.remove_suffix(1);
  auto tasks = parse_number<uint64_t>(running_tasks.substr(slash + 1));
  auto pid = parse_number<pid_t>(last_pid);
  if (!tasks || !pid || !parse_number<uint64_t>(running_tasks.substr(0, slash))) return std::nullopt;
  return PidCounters{*tasks, *pid};
}

bool ForkGate::must_walk() {
  auto text = loadavg_.read();
  return must_walk(text ? parse_loadavg_pids(*text) : std::nullopt);
}

bool ForkGate::must_walk(const std::optional<PidCounters>& now) {
  if (!now || now != last_) {
    last_ = now;
    steady_reads_ = 0;
  } else if (steady_reads_ < kWalksAfterAChange) {
    ++steady_reads_;
  }
  const bool walk = !now || steady_reads_ < kWalksAfterAChange || skipped_in_a_row_ >= max_skipped_;
  if (walk) {
    skipped_in_a_row_ = 0;
  } else {
    ++skipped_in_a_row_;
    ++skipped_total_;
  }
  return walk;
}

}  // namespace stepscope
