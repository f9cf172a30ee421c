// sysmon inside `record`: system, process and GPU counters written into the
// Run as counter tracks at 10 Hz, on the run's monotonic clock.
//
// Track names are `<scope>[.<instance>].<quantity>_<unit>` (docs/monitor.md
// lists them all): system-wide tracks have pid 0 (cpu.total.percent,
// cpu.3.percent, memory.used_bytes, disk.sda.util_percent,
// net.eth0.rx_bytes_per_s, gpu.0.util_percent), per-process tracks carry the
// pid (process.cpu_percent, process.rss_bytes, process.gpu.0.memory_bytes).
// The unit column repeats the unit: percent, bytes, bytes/s, count, 1/s,
// MHz, W, C, load.
#pragma once

#include <map>
#include <string>
#include <tuple>

#include "collectors/recording_source.hpp"
#include "collectors/sysmon/sysmon.hpp"

namespace stepscope {

class SysmonSource : public RecordingSource {
 public:
  explicit SysmonSource(const SysmonOptions& options = recording_options());

  int64_t poll_interval_ns() const override { return 100'000'000; }  // 10 Hz
  void poll(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) override;

  // Without PCIe throughput, whose NVML query would block the sampler.
  static SysmonOptions recording_options();

 private:
  void add(Run& run, const std::string& name, int64_t pid, const char* unit, int64_t ts_ns,
           double value);
  void add_system(Run& run, const SysmonSample& s);
  void add_processes(Run& run, const SysmonSample& s);
  void add_gpus(Run& run, const SysmonSample& s);

  Sysmon sysmon_;
  std::map<std::tuple<std::string, int64_t>, CounterTrackId> tracks_;
  bool reason_noted_ = false;
};

}  // namespace stepscope
