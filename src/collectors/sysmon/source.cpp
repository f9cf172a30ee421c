#include "collectors/sysmon/source.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace stepscope {

namespace {

constexpr const char* kPercent = "percent";
constexpr const char* kBytes = "bytes";
constexpr const char* kBytesPerSecond = "bytes/s";
constexpr const char* kCount = "count";
constexpr const char* kPerSecond = "1/s";

}  // namespace

SysmonOptions SysmonSource::recording_options() {
  SysmonOptions options;
  options.gpu_pcie = false;
  options.gpu_process_utilization = false;
  options.slow_interval_ns = 1'000'000'000;
  return options;
}

SysmonSource::SysmonSource(const SysmonOptions& options) : sysmon_(options) {}

void SysmonSource::poll(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) {
  SysmonSample s = sysmon_.sample(now_ns, tree);
  if (!reason_noted_) {  // once, so a reader of the run knows why GPUs are missing
    reason_noted_ = true;
    if (!sysmon_.gpu_absent_reason().empty()) run.metadata["sysmon_gpu_absent"] = sysmon_.gpu_absent_reason();
  }
  for (const std::string& warning : s.warnings) run.metadata["sysmon_warning"] = warning;
  if (s.unreadable > 0) run.metadata["sysmon_unreadable"] = std::to_string(s.unreadable);
  if (!s.has_rates) return;  // the first sample only primes the deltas
  add_system(run, s);
  add_processes(run, s);
  add_gpus(run, s);
}

void SysmonSource::add(Run& run, const std::string& name, int64_t pid, const char* unit,
                       int64_t ts_ns, double value) {
  auto [it, inserted] = tracks_.try_emplace({name, pid}, 0);
  if (inserted) {
    it->second = static_cast<CounterTrackId>(run.counter_tracks.size());
    run.counter_tracks.push_back({run.strings.intern(name), pid, run.strings.intern(unit)});
  }
  run.counter_values.push_back({it->second, ts_ns, value});
}

void SysmonSource::add_system(Run& run, const SysmonSample& s) {
  const int64_t ts = s.ts_ns;
  const CpuPercent& cpu = s.system.cpu;
  add(run, "cpu.total.percent", 0, kPercent, ts, cpu.busy);
  add(run, "cpu.total.user_percent", 0, kPercent, ts, cpu.user);
  add(run, "cpu.total.system_percent", 0, kPercent, ts, cpu.system);
  add(run, "cpu.total.iowait_percent", 0, kPercent, ts, cpu.iowait);
  // Per core only the busy share: the breakdown of 100+ cores at 10 Hz
  // would outweigh the stacks.
  for (const CoreSample& core : s.system.cores) {
    add(run, fmt::format("cpu.{}.percent", core.id), 0, kPercent, ts, core.percent.busy);
  }
  if (s.system.load) add(run, "load.1m", 0, "load", ts, s.system.load->one);
  if (const auto& m = s.system.memory) {
    add(run, "memory.used_bytes", 0, kBytes, ts, static_cast<double>(m->used_bytes));
    add(run, "memory.available_bytes", 0, kBytes, ts, static_cast<double>(m->available_bytes));
    add(run, "memory.cached_bytes", 0, kBytes, ts, static_cast<double>(m->cached_bytes));
  }
  if (const auto& c = s.system.cgroup_memory) {
    if (c->limit_bytes) add(run, "cgroup.memory.limit_bytes", 0, kBytes, ts, static_cast<double>(*c->limit_bytes));
    add(run, "cgroup.memory.usage_bytes", 0, kBytes, ts, static_cast<double>(c->usage_bytes));
    add(run, "cgroup.memory.working_set_bytes", 0, kBytes, ts, static_cast<double>(c->working_set_bytes));
  }
  for (const DiskRates& d : s.system.disks) {
    add(run, fmt::format("disk.{}.read_bytes_per_s", d.name), 0, kBytesPerSecond, ts, d.read_bytes_per_s);
    add(run, fmt::format("disk.{}.write_bytes_per_s", d.name), 0, kBytesPerSecond, ts, d.write_bytes_per_s);
    add(run, fmt::format("disk.{}.util_percent", d.name), 0, kPercent, ts, d.util_percent);
  }
  for (const NetRates& n : s.system.networks) {
    add(run, fmt::format("net.{}.rx_bytes_per_s", n.name), 0, kBytesPerSecond, ts, n.rx_bytes_per_s);
    add(run, fmt::format("net.{}.tx_bytes_per_s", n.name), 0, kBytesPerSecond, ts, n.tx_bytes_per_s);
  }
}

void SysmonSource::add_processes(Run& run, const SysmonSample& s) {
  const int64_t ts = s.ts_ns;
  for (const ProcessSample& p : s.processes) {
    const int64_t pid = p.pid;
    add(run, "process.rss_bytes", pid, kBytes, ts, static_cast<double>(p.rss_bytes));
    add(run, "process.peak_rss_bytes", pid, kBytes, ts, static_cast<double>(p.peak_rss_bytes));
    add(run, "process.threads", pid, kCount, ts, p.threads);
    add(run, "process.disk_wait_threads", pid, kCount, ts, p.disk_wait_threads);
    if (!p.has_rates) continue;
    add(run, "process.cpu_percent", pid, kPercent, ts, p.cpu_percent);
    if (p.io) {
      add(run, "process.read_bytes_per_s", pid, kBytesPerSecond, ts, p.read_bytes_per_s);
      add(run, "process.write_bytes_per_s", pid, kBytesPerSecond, ts, p.write_bytes_per_s);
    }
    add(run, "process.voluntary_switches_per_s", pid, kPerSecond, ts, p.voluntary_switches_per_s);
    add(run, "process.involuntary_switches_per_s", pid, kPerSecond, ts, p.involuntary_switches_per_s);
  }
}

void SysmonSource::add_gpus(Run& run, const SysmonSample& s) {
  const int64_t ts = s.ts_ns;
  for (const GpuReading& g : s.gpus) {
    // Who the GPU is, as NVIDIA's DCGM exporter names it (record --metrics joins on it).
    for (auto [key, value] : {std::pair{"name", &g.name}, std::pair{"uuid", &g.uuid}}) {
      if (!value->empty()) run.metadata[fmt::format("sysmon_gpu.{}.{}", g.index, key)] = *value;
    }
    auto gauge = [&](const char* quantity, const char* unit, const auto& value) {
      if (value) add(run, fmt::format("gpu.{}.{}", g.index, quantity), 0, unit, ts, static_cast<double>(*value));
    };
    gauge("util_percent", kPercent, g.util_percent);
    gauge("memory_util_percent", kPercent, g.memory_util_percent);
    gauge("memory_used_bytes", kBytes, g.memory_used_bytes);
    gauge("memory_total_bytes", kBytes, g.memory_total_bytes);
    gauge("sm_clock_mhz", "MHz", g.sm_clock_mhz);
    gauge("power_watts", "W", g.power_watts);
    gauge("temperature_c", "C", g.temperature_c);
    gauge("pcie_rx_bytes_per_s", kBytesPerSecond, g.pcie_rx_bytes_per_s);
    gauge("pcie_tx_bytes_per_s", kBytesPerSecond, g.pcie_tx_bytes_per_s);
    for (const GpuProcessReading& p : g.processes) {
      // Other jobs sharing the GPU are not part of this run.
      bool in_tree = std::any_of(s.processes.begin(), s.processes.end(),
                                 [&](const ProcessSample& t) { return t.pid == p.pid; });
      if (!in_tree) continue;
      if (p.memory_bytes) {
        add(run, fmt::format("process.gpu.{}.memory_bytes", g.index), p.pid, kBytes, ts,
            static_cast<double>(*p.memory_bytes));
      }
      if (p.sm_util_percent) {
        add(run, fmt::format("process.gpu.{}.sm_util_percent", g.index), p.pid, kPercent, ts,
            *p.sm_util_percent);
      }
    }
  }
}

}  // namespace stepscope
