// sysmon: system, process and GPU counters as plain samples, for `monitor`
// and for the counter tracks of `record`.
//
// Rates (CPU percent, bytes per second) are deltas against the previous
// sample, so the first sample only primes: its `has_rates` is false. A
// /proc entry that cannot be read is skipped and counted, never fatal; an
// NVML that fails mid-run disables the GPU section and leaves one warning.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/sysmon/cgroup_memory.hpp"
#include "collectors/sysmon/nvml.hpp"
#include "collectors/sysmon/process.hpp"
#include "collectors/sysmon/system.hpp"

namespace stepscope {

struct CoreSample {
  int id = 0;  // N of cpuN
  CpuPercent percent;
};

struct SystemSample {
  CpuPercent cpu;                 // all cores together, 0..100
  std::vector<CoreSample> cores;  // each 0..100
  std::optional<LoadAverage> load;
  std::optional<MemoryInfo> memory;
  // The memory cgroup of the sampled processes (of the first of them; of
  // this process when there are none): in a container, the real capacity.
  std::optional<CgroupMemory> cgroup_memory;
  std::vector<DiskRates> disks;
  std::vector<NetRates> networks;
};

struct ProcessSample {
  pid_t pid = 0;
  std::string name;  // untrusted: the process chose it
  double cpu_percent = 0;  // of one CPU: exceeds 100 with several busy threads
  uint64_t rss_bytes = 0, peak_rss_bytes = 0;
  std::optional<ProcessIo> io;  // cumulative bytes since the process started
  double read_bytes_per_s = 0, write_bytes_per_s = 0;
  uint32_t threads = 0, disk_wait_threads = 0;
  uint64_t voluntary_switches = 0, involuntary_switches = 0;  // cumulative
  double voluntary_switches_per_s = 0, involuntary_switches_per_s = 0;
  bool has_rates = false;  // false the first time an older process is seen
};

struct SysmonSample {
  int64_t ts_ns = 0;       // the caller's clock (monotonic)
  int64_t unix_ns = 0;     // wall clock, for logs
  double interval_s = 0;   // since the previous sample; 0 for the first
  bool has_rates = false;  // false for the first sample, which only primes
  SystemSample system;
  std::vector<ProcessSample> processes;
  std::vector<GpuReading> gpus;  // empty when there is no GPU section
  uint64_t unreadable = 0;       // /proc entries skipped so far, in total
  std::vector<std::string> warnings;  // new in this sample (NVML failed, ...)
};

struct SysmonOptions {
  // The load, the disk and network rates and the GPUs' slow queries
  // (Nvml::Queries) are read at most this often: at every sample when 0.
  // `record` polls at 10 Hz and reads them once a second (docs/monitor.md,
  // "Cost").
  int64_t slow_interval_ns = 0;
  bool gpus = true;
  bool gpu_pcie = true;  // PCIe throughput blocks ~40 ms per GPU: off in `record`
  // Each process's SM utilization: 1.5-2.5 ms of CPU per GPU on an H200, so
  // off in `record` (where its GPU collector runs, in launch mode with
  // CUPTI, it has each process's kernels exactly; `monitor` shows it).
  bool gpu_process_utilization = true;
  std::string nvml_library = kNvmlLibrary;
};

class Sysmon {
 public:
  explicit Sysmon(const SysmonOptions& options = {});

  // One sample of the machine and of `pids` at `now_ns`.
  SysmonSample sample(int64_t now_ns, const std::vector<pid_t>& pids);

  // Why the sample has no GPUs (empty when it has some).
  const std::string& gpu_absent_reason() const { return gpu_reason_; }

 private:
  SystemSample cpu_rates(const SystemCounters& now) const;
  void add_slow_rates(SystemCounters& now, int64_t now_ns, SystemSample& s);
  std::vector<ProcessSample> process_rates(const std::vector<pid_t>& pids, double seconds);
  void read_gpus(SysmonSample& out, bool slow);

  SysmonOptions options_;
  std::optional<Nvml> nvml_;
  SystemCounterReader system_counters_;
  ProcessCounterReader process_counters_;
  CgroupMemoryReader cgroup_memory_;
  std::string gpu_reason_;
  long ticks_per_second_;
  bool primed_ = false;
  int64_t previous_ns_ = 0;
  SystemCounters previous_system_;
  int64_t next_slow_ns_ = 0;
  bool slow_primed_ = false;
  int64_t previous_slow_ns_ = 0;
  std::vector<DiskCounters> previous_disks_;
  std::vector<NetCounters> previous_networks_;
  // (pid, start ticks) -> the previous reading, so a reused pid starts afresh.
  std::map<std::pair<pid_t, uint64_t>, ProcessCounters> previous_processes_;
  uint64_t unreadable_ = 0;
};

// The live processes of the tree under `root`, plus the descendants of
// `known` processes of it whose parent exited (orphans are reparented away
// from the tree, but they are still the job's). Zombies are left out.
std::vector<pid_t> follow_tree(pid_t root, const std::vector<pid_t>& known);

}  // namespace stepscope
