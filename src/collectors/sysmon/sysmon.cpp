#include "collectors/sysmon/sysmon.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "collectors/process/proc_threads.hpp"
#include "collectors/process/tree.hpp"

namespace stepscope {

namespace {

template <typename T>
const T* find_named(const std::vector<T>& items, const std::string& name) {
  auto it = std::find_if(items.begin(), items.end(), [&](const T& item) { return item.name == name; });
  return it == items.end() ? nullptr : &*it;
}

double rate(uint64_t before, uint64_t after, double seconds) {
  return seconds > 0 ? static_cast<double>(counter_delta(before, after)) / seconds : 0;
}

std::vector<CoreSample> core_rates(const CpuStat& before, const CpuStat& after) {
  std::vector<CoreSample> cores;
  for (size_t i = 0; i < after.cores.size(); ++i) {
    auto it = std::find(before.core_ids.begin(), before.core_ids.end(), after.core_ids[i]);
    if (it == before.core_ids.end()) continue;  // came online since the last sample
    const CpuTimes& previous = before.cores[static_cast<size_t>(it - before.core_ids.begin())];
    cores.push_back({after.core_ids[i], cpu_percent(previous, after.cores[i])});
  }
  return cores;
}

ProcessSample describe_process(const ProcessCounters& now) {
  ProcessSample p;
  p.pid = now.pid;
  p.name = now.status.name;
  p.rss_bytes = now.status.rss_bytes;
  p.peak_rss_bytes = now.status.peak_rss_bytes;
  p.io = now.io;
  p.threads = now.status.threads;
  p.disk_wait_threads = now.thread_totals.disk_wait;
  p.voluntary_switches = now.thread_totals.voluntary_switches;
  p.involuntary_switches = now.thread_totals.involuntary_switches;
  return p;
}

void add_process_rates(ProcessSample& p, const ProcessCounters& before, const ProcessCounters& now,
                       double seconds, long ticks_per_second) {
  p.cpu_percent = process_cpu_percent(before.cpu_ticks, now.cpu_ticks, seconds, ticks_per_second);
  if (before.io && now.io) {
    p.read_bytes_per_s = rate(before.io->read_bytes, now.io->read_bytes, seconds);
    p.write_bytes_per_s = rate(before.io->write_bytes, now.io->write_bytes, seconds);
  }
  const ThreadTotals& a = before.thread_totals;
  const ThreadTotals& b = now.thread_totals;
  p.voluntary_switches_per_s = rate(a.voluntary_switches, b.voluntary_switches, seconds);
  p.involuntary_switches_per_s = rate(a.involuntary_switches, b.involuntary_switches, seconds);
  p.has_rates = true;
}

// A process born since the previous sample did all its work in the interval,
// so its counters are deltas from zero.
ProcessCounters newborn_baseline(const ProcessCounters& now) {
  ProcessCounters zero;
  zero.pid = now.pid;
  zero.start_ticks = now.start_ticks;
  if (now.io) zero.io = ProcessIo{};
  return zero;
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Sysmon::Sysmon(const SysmonOptions& options)
    : options_(options), ticks_per_second_(::sysconf(_SC_CLK_TCK)) {
  if (!options_.gpus) {
    gpu_reason_ = "GPU counters not requested";
    return;
  }
  nvml_.emplace(options_.nvml_library);
  if (!nvml_->available()) gpu_reason_ = nvml_->reason();
}

SysmonSample Sysmon::sample(int64_t now_ns, const std::vector<pid_t>& pids) {
  SysmonSample out;
  out.ts_ns = now_ns;
  out.unix_ns = unix_now_ns();
  out.has_rates = primed_;
  out.interval_s = primed_ ? static_cast<double>(now_ns - previous_ns_) / 1e9 : 0;
  const bool slow = !primed_ || now_ns >= next_slow_ns_;
  if (slow) next_slow_ns_ = now_ns + options_.slow_interval_ns;
  SystemCounters system = system_counters_.read(slow);
  unreadable_ += system.unreadable;
  if (primed_) out.system = cpu_rates(system);
  if (slow) add_slow_rates(system, now_ns, out.system);
  out.system.memory = system.memory;
  out.system.cgroup_memory = cgroup_memory_.read(pids.empty() ? ::getpid() : pids.front(), now_ns);
  out.processes = process_rates(pids, out.interval_s);
  read_gpus(out, slow);
  out.unreadable = unreadable_;
  previous_system_ = std::move(system);
  previous_ns_ = now_ns;
  primed_ = true;
  return out;
}

SystemSample Sysmon::cpu_rates(const SystemCounters& now) const {
  SystemSample s;
  const SystemCounters& before = previous_system_;
  if (before.cpu && now.cpu) {
    s.cpu = cpu_percent(before.cpu->total, now.cpu->total);
    s.cores = core_rates(*before.cpu, *now.cpu);
  }
  return s;
}

// The load as read, and disk and network rates since the previous slow
// reading (which may be several samples back).
void Sysmon::add_slow_rates(SystemCounters& now, int64_t now_ns, SystemSample& s) {
  s.load = now.load;
  if (slow_primed_) {
    const double seconds = static_cast<double>(now_ns - previous_slow_ns_) / 1e9;
    for (const DiskCounters& disk : now.disks) {
      if (const DiskCounters* previous = find_named(previous_disks_, disk.name)) {
        s.disks.push_back(disk_rates(*previous, disk, seconds));
      }
    }
    for (const NetCounters& net : now.networks) {
      if (const NetCounters* previous = find_named(previous_networks_, net.name)) {
        s.networks.push_back(net_rates(*previous, net, seconds));
      }
    }
  }
  previous_disks_ = std::move(now.disks);
  previous_networks_ = std::move(now.networks);
  previous_slow_ns_ = now_ns;
  slow_primed_ = true;
}

std::vector<ProcessSample> Sysmon::process_rates(const std::vector<pid_t>& pids, double seconds) {
  // Processes that started after the previous sample are newborn; -1 when
  // there was none.
  double born_after_s = primed_ ? previous_system_.uptime_s : -1;
  std::map<std::pair<pid_t, uint64_t>, ProcessCounters> current;
  std::vector<ProcessSample> samples;
  for (pid_t pid : pids) {
    auto now = process_counters_.read(pid, unreadable_);
    if (!now) continue;  // exited: its rows end here
    ProcessSample p = describe_process(*now);
    std::pair<pid_t, uint64_t> key{pid, now->start_ticks};
    if (auto it = previous_processes_.find(key); it != previous_processes_.end()) {
      add_process_rates(p, it->second, *now, seconds, ticks_per_second_);
    } else if (born_after_s >= 0 && ticks_per_second_ > 0 &&
               static_cast<double>(now->start_ticks) / static_cast<double>(ticks_per_second_) >=
                   born_after_s - 0.01) {
      add_process_rates(p, newborn_baseline(*now), *now, seconds, ticks_per_second_);
    }
    samples.push_back(std::move(p));
    current.emplace(key, std::move(*now));
  }
  previous_processes_ = std::move(current);
  process_counters_.keep_only(pids);
  return samples;
}

void Sysmon::read_gpus(SysmonSample& out, bool slow) {
  if (!nvml_ || !nvml_->available()) return;
  const Nvml::Queries queries{
      .slow = slow, .pcie = options_.gpu_pcie, .process_utilization = options_.gpu_process_utilization};
  if (auto gpus = nvml_->read(queries)) {
    out.gpus = std::move(*gpus);
    return;
  }
  gpu_reason_ = nvml_->reason();
  out.warnings.push_back("GPU counters disabled: " + gpu_reason_);
}

std::vector<pid_t> follow_tree(pid_t root, const std::vector<pid_t>& known) {
  std::vector<pid_t> tree = process_tree(root);
  for (pid_t pid : known) {
    if (std::find(tree.begin(), tree.end(), pid) != tree.end()) continue;
    for (pid_t member : process_tree(pid)) {
      if (std::find(tree.begin(), tree.end(), member) == tree.end()) tree.push_back(member);
    }
  }
  std::erase_if(tree, [](pid_t pid) {
    auto stat = read_proc_stat(pid);
    return !stat || stat->state == 'Z' || stat->state == 'X';
  });
  return tree;
}

}  // namespace stepscope
