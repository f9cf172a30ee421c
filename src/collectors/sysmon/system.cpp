#include "collectors/sysmon/system.hpp"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>

#include "collectors/process/proc_files.hpp"
#include "collectors/process/proc_text.hpp"

namespace stepscope {

namespace {

constexpr uint64_t kSectorBytes = 512;

// Fields 1..8 of a cpu line; older kernels write fewer, which count as 0.
std::optional<CpuTimes> parse_cpu_fields(std::span<const std::string_view> fields) {
  if (fields.size() < 5) return std::nullopt;  // user nice system idle at least
  uint64_t values[8] = {};
  for (size_t i = 0; i < 8 && i + 1 < fields.size(); ++i) {
    auto value = parse_number<uint64_t>(fields[i + 1]);
    if (!value) return std::nullopt;
    values[i] = *value;
  }
  return CpuTimes{values[0], values[1], values[2], values[3],
                  values[4], values[5], values[6], values[7]};
}

double per_second(uint64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds : 0;
}

template <typename T, typename Parse>
std::optional<T> read_parsed(KeptFile& file, Parse parse, uint64_t& unreadable) {
  auto text = file.read();
  std::optional<T> value = text ? parse(*text) : std::nullopt;
  if (!value) ++unreadable;
  return value;
}

}  // namespace

std::optional<uint64_t> meminfo_bytes(std::string_view text, std::string_view key) {
  std::string_view fields[2];
  const size_t count = split_fields(status_field(text, key), fields);
  if (count == 0) return std::nullopt;
  auto value = parse_number<uint64_t>(fields[0]);
  if (!value) return std::nullopt;
  bool kilobytes = count > 1 && fields[1] == "kB";
  return kilobytes ? *value * 1024 : *value;
}

std::optional<CpuStat> parse_cpu_stat(std::string_view text) {
  CpuStat stat;
  bool have_total = false;
  for_each_line(text, [&](std::string_view line) {
    if (!line.starts_with("cpu")) return;
    std::string_view field_array[9];  // the name and eight counters; later ones are not used
    std::span<const std::string_view> fields(field_array, split_fields(line, field_array));
    auto times = parse_cpu_fields(fields);
    if (!times) return;
    if (fields[0] == "cpu") {
      stat.total = *times;
      have_total = true;
    } else if (auto id = parse_number<int>(fields[0].substr(3)); id && *id >= 0) {
      stat.core_ids.push_back(*id);
      stat.cores.push_back(*times);
    }
  });
  if (!have_total) return std::nullopt;
  return stat;
}

std::optional<LoadAverage> parse_loadavg(std::string_view text) {
  std::string_view fields[3];
  if (split_fields(text.substr(0, text.find('\n')), fields) < 3) return std::nullopt;
  auto one = parse_number<double>(fields[0]);
  auto five = parse_number<double>(fields[1]);
  auto fifteen = parse_number<double>(fields[2]);
  if (!one || !five || !fifteen) return std::nullopt;
  return LoadAverage{*one, *five, *fifteen};
}

std::optional<MemoryInfo> parse_meminfo(std::string_view text) {
  auto total = meminfo_bytes(text, "MemTotal");
  auto available = meminfo_bytes(text, "MemAvailable");
  if (!total || !available) return std::nullopt;
  MemoryInfo info;
  info.total_bytes = *total;
  info.available_bytes = std::min(*available, *total);
  info.used_bytes = *total - info.available_bytes;
  info.cached_bytes = meminfo_bytes(text, "Cached").value_or(0);
  return info;
}

std::vector<DiskCounters> parse_diskstats(std::string_view text) {
  std::vector<DiskCounters> disks;
  for_each_line(text, [&](std::string_view line) {
    // major minor name reads merged sectors ms writes merged sectors ms in_flight io_ticks ...
    std::string_view f[13];
    if (split_fields(line, f) < 13) return;
    uint64_t v[10];
    for (size_t i = 0; i < 10; ++i) {
      auto value = parse_number<uint64_t>(f[i + 3]);
      if (!value) return;
      v[i] = *value;
    }
    disks.push_back({std::string(f[2]), v[0], v[2], v[4], v[6], v[9]});
  });
  return disks;
}

std::vector<NetCounters> parse_net_dev(std::string_view text) {
  std::vector<NetCounters> nets;
  for_each_line(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;  // the header lines have '|', no ':'
    std::string_view name[2];
    std::string_view f[9];
    if (split_fields(line.substr(0, colon), name) != 1 || split_fields(line.substr(colon + 1), f) < 9) return;
    auto rx = parse_number<uint64_t>(f[0]);
    auto tx = parse_number<uint64_t>(f[8]);
    if (rx && tx) nets.push_back({std::string(name[0]), *rx, *tx});
  });
  return nets;
}

namespace {

// What /proc/uptime says, without formatting it: the kernel writes the
// boot-time clock there, and start times in /proc/PID/stat count from boot
// on the same clock.
double seconds_since_boot() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

}  // namespace

SystemCounterReader::SystemCounterReader()
    : stat_("/proc/stat", KeptFile::Shape::kWhole),
      loadavg_("/proc/loadavg", KeptFile::Shape::kWhole),
      meminfo_("/proc/meminfo", KeptFile::Shape::kWhole),
      diskstats_("/proc/diskstats"),
      net_dev_("/proc/net/dev") {}

bool SystemCounterReader::is_whole_disk(const std::string& name) {
  auto found = whole_disks_.find(name);
  if (found != whole_disks_.end()) return found->second;
  struct stat info;
  bool whole = !name.starts_with("loop") && !name.starts_with("ram") &&
               ::stat(("/sys/block/" + name).c_str(), &info) == 0;
  whole_disks_.emplace(name, whole);
  return whole;
}

SystemCounters SystemCounterReader::read(bool slow_too) {
  SystemCounters c;
  c.cpu = read_parsed<CpuStat>(stat_, parse_cpu_stat, c.unreadable);
  c.memory = read_parsed<MemoryInfo>(meminfo_, parse_meminfo, c.unreadable);
  c.uptime_s = seconds_since_boot();
  if (slow_too) read_slow(c);
  return c;
}

void SystemCounterReader::read_slow(SystemCounters& c) {
  c.load = read_parsed<LoadAverage>(loadavg_, parse_loadavg, c.unreadable);
  if (auto text = diskstats_.read()) {
    for (DiskCounters& disk : parse_diskstats(*text)) {
      if (disk.reads + disk.writes > 0 && is_whole_disk(disk.name)) c.disks.push_back(std::move(disk));
    }
  } else {
    ++c.unreadable;
  }
  if (auto text = net_dev_.read()) {
    c.networks = parse_net_dev(*text);
  } else {
    ++c.unreadable;
  }
}

CpuPercent cpu_percent(const CpuTimes& before, const CpuTimes& after) {
  uint64_t total = counter_delta(before.total(), after.total());
  if (total == 0) return {};
  auto share = [total](uint64_t ticks) {
    return std::min(100.0, 100.0 * static_cast<double>(ticks) / static_cast<double>(total));
  };
  uint64_t idle = counter_delta(before.idle, after.idle);
  uint64_t iowait = counter_delta(before.iowait, after.iowait);
  CpuPercent p;
  p.busy = share(total - std::min(total, idle + iowait));
  p.user = share(counter_delta(before.user + before.nice, after.user + after.nice));
  p.system = share(counter_delta(before.system + before.irq + before.softirq,
                                 after.system + after.irq + after.softirq));
  p.iowait = share(iowait);
  return p;
}

DiskRates disk_rates(const DiskCounters& before, const DiskCounters& after, double seconds) {
  DiskRates r;
  r.name = after.name;
  r.read_bytes_per_s = per_second(counter_delta(before.sectors_read, after.sectors_read) * kSectorBytes, seconds);
  r.write_bytes_per_s =
      per_second(counter_delta(before.sectors_written, after.sectors_written) * kSectorBytes, seconds);
  double busy_s = static_cast<double>(counter_delta(before.io_ticks_ms, after.io_ticks_ms)) / 1000.0;
  r.util_percent = seconds > 0 ? std::min(100.0, 100.0 * busy_s / seconds) : 0;
  return r;
}

NetRates net_rates(const NetCounters& before, const NetCounters& after, double seconds) {
  return {after.name, per_second(counter_delta(before.rx_bytes, after.rx_bytes), seconds),
          per_second(counter_delta(before.tx_bytes, after.tx_bytes), seconds)};
}

}  // namespace stepscope
