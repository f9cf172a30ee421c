// System-wide counters from /proc: CPU time per core, load, memory, disks and
// network interfaces, and the rates derived from two readings of them.
//
// Parsing takes the text of a file, so tests feed recorded fixtures; the
// reader joins the files of the running machine. Every parser tolerates
// truncated or garbled text: what cannot be read is left out, never guessed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/process/kept_file.hpp"

namespace stepscope {

// One "cpu" line of /proc/stat, in clock ticks since boot.
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  // guest time is already counted in user, so it is not added again.
  uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

struct CpuStat {
  CpuTimes total;
  std::vector<int> core_ids;    // the N of each "cpuN" line (offline cores are absent)
  std::vector<CpuTimes> cores;  // parallel to core_ids
};

// The "cpu" and "cpuN" lines of /proc/stat; nullopt without a valid "cpu" line.
std::optional<CpuStat> parse_cpu_stat(std::string_view text);

struct LoadAverage {
  double one = 0, five = 0, fifteen = 0;
};
std::optional<LoadAverage> parse_loadavg(std::string_view text);

// /proc/meminfo in bytes. `used` is total - available, as free(1) computes it
// since procps-ng 4: memory that cannot be had without swapping.
struct MemoryInfo {
  uint64_t total_bytes = 0, available_bytes = 0, cached_bytes = 0, used_bytes = 0;
};
std::optional<MemoryInfo> parse_meminfo(std::string_view text);

// The "Key: N kB" field `key` of /proc/meminfo or /proc/PID/status, in bytes;
// nullopt when absent or not a number.
std::optional<uint64_t> meminfo_bytes(std::string_view text, std::string_view key);

// One line of /proc/diskstats. Sectors are 512 bytes whatever the device's
// own sector size (the kernel's unit for these counters).
struct DiskCounters {
  std::string name;
  uint64_t reads = 0, sectors_read = 0, writes = 0, sectors_written = 0;
  uint64_t io_ticks_ms = 0;  // milliseconds during which the device had I/O in flight
};
std::vector<DiskCounters> parse_diskstats(std::string_view text);

struct NetCounters {
  std::string name;
  uint64_t rx_bytes = 0, tx_bytes = 0;
};
// /proc/net/dev, without its two header lines.
std::vector<NetCounters> parse_net_dev(std::string_view text);

// One reading of the whole machine. `unreadable` counts files that could not
// be read or parsed (a container hiding /proc/diskstats, say).
struct SystemCounters {
  std::optional<CpuStat> cpu;
  std::optional<MemoryInfo> memory;
  double uptime_s = 0;  // seconds since boot (CLOCK_BOOTTIME, what /proc/uptime shows)
  // The slow part: empty unless read (see SystemCounterReader::read).
  std::optional<LoadAverage> load;
  std::vector<DiskCounters> disks;  // whole disks only, see SystemCounterReader
  std::vector<NetCounters> networks;
  uint64_t unreadable = 0;
};

// Reads the files of this machine, through descriptors kept open from one
// reading to the next. Disks are those iostat shows by default: whole
// devices (listed in /sys/block) that have done I/O, without loop and ram
// devices.
class SystemCounterReader {
 public:
  SystemCounterReader();
  // CPU times and memory always; the load, disks and networks too when
  // `slow_too` (the kernel updates the load every 5 s, and disk and network
  // rates are wanted over a second, as iostat gives them).
  SystemCounters read(bool slow_too = true);

 private:
  void read_slow(SystemCounters& c);
  bool is_whole_disk(const std::string& name);

  KeptFile stat_, loadavg_, meminfo_, diskstats_, net_dev_;
  // Whether each disk name seen is a whole device: asked of /sys once per name.
  std::map<std::string, bool, std::less<>> whole_disks_;
};

// Utilization of one CPU (or all) between two readings, in percent of its
// time: user includes nice; system includes irq and softirq; busy is
// everything but idle and iowait. All zero when no tick elapsed.
struct CpuPercent {
  double busy = 0, user = 0, system = 0, iowait = 0;
};
CpuPercent cpu_percent(const CpuTimes& before, const CpuTimes& after);

// Throughput and utilization of one disk over `seconds`. Utilization is
// iostat's %util: the share of wall time the device was busy, from the
// io_ticks delta, capped at 100.
struct DiskRates {
  std::string name;
  double read_bytes_per_s = 0, write_bytes_per_s = 0, util_percent = 0;
};
DiskRates disk_rates(const DiskCounters& before, const DiskCounters& after, double seconds);

struct NetRates {
  std::string name;
  double rx_bytes_per_s = 0, tx_bytes_per_s = 0;
};
NetRates net_rates(const NetCounters& before, const NetCounters& after, double seconds);

// after - before, or 0 when a counter went backwards (a device was replaced,
// a CPU went offline and back): a rate is never negative.
inline uint64_t counter_delta(uint64_t before, uint64_t after) {
  return after >= before ? after - before : 0;
}

}  // namespace stepscope
