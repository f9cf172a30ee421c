#include "renderers/monitor/table.hpp"

#include <time.h>

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

// Home the cursor and clear the screen: the next block replaces the last.
constexpr const char* kClearScreen = "\x1b[H\x1b[2J";

std::string clock_time(int64_t unix_ns) {
  time_t seconds = static_cast<time_t>(unix_ns / 1'000'000'000);
  tm local{};
  localtime_r(&seconds, &local);
  char text[16];
  strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

template <typename T>
std::string optional_text(const std::optional<T>& value, const char* format_string) {
  return value ? fmt::format(fmt::runtime(format_string), *value) : std::string("-");
}

void append_system(std::string& out, const SysmonSample& s, bool verbose) {
  const SystemSample& sys = s.system;
  out += fmt::format("{}  CPU {:5.1f}%  (user {:.1f}  sys {:.1f}  iowait {:.1f})", clock_time(s.unix_ns),
                     sys.cpu.busy, sys.cpu.user, sys.cpu.system, sys.cpu.iowait);
  if (sys.load) out += fmt::format("  load {:.2f} {:.2f} {:.2f}", sys.load->one, sys.load->five, sys.load->fifteen);
  out += '\n';
  if (sys.memory) {
    out += fmt::format("Mem   used {}  available {}  cache {}  total {}\n", human_bytes(static_cast<double>(sys.memory->used_bytes)),
                       human_bytes(static_cast<double>(sys.memory->available_bytes)),
                       human_bytes(static_cast<double>(sys.memory->cached_bytes)),
                       human_bytes(static_cast<double>(sys.memory->total_bytes)));
  }
  // A limited memory cgroup (a container) is the memory the job really has.
  if (const auto& c = sys.cgroup_memory; c && c->limit_bytes) {
    out += fmt::format("Cgroup memory  working set {}  usage {}  limit {}\n",
                       human_bytes(static_cast<double>(c->working_set_bytes)),
                       human_bytes(static_cast<double>(c->usage_bytes)), human_bytes(static_cast<double>(*c->limit_bytes)));
  }
  if (!sys.cores.empty()) {
    out += "Cores";
    for (const CoreSample& core : sys.cores) out += fmt::format(" {:3.0f}", core.percent.busy);
    out += "  %\n";
  }
  if (verbose) {
    for (const CoreSample& core : sys.cores) {
      out += fmt::format("  cpu{:<3} {:5.1f}%  user {:5.1f}  sys {:5.1f}  iowait {:5.1f}\n", core.id,
                         core.percent.busy, core.percent.user, core.percent.system, core.percent.iowait);
    }
  }
  for (const DiskRates& d : sys.disks) {
    out += fmt::format("Disk  {:<10} read {:>7}/s  write {:>7}/s  util {:5.1f}%\n", printable_utf8(d.name),
                       human_bytes(d.read_bytes_per_s), human_bytes(d.write_bytes_per_s), d.util_percent);
  }
  for (const NetRates& n : sys.networks) {
    if (!verbose && n.rx_bytes_per_s == 0 && n.tx_bytes_per_s == 0) continue;  // idle interfaces
    out += fmt::format("Net   {:<10} rx {:>7}/s  tx {:>7}/s\n", printable_utf8(n.name),
                       human_bytes(n.rx_bytes_per_s), human_bytes(n.tx_bytes_per_s));
  }
}

void append_gpus(std::string& out, const SysmonSample& s, const MonitorTableOptions& options) {
  for (const GpuReading& g : s.gpus) {
    std::string memory = g.memory_used_bytes && g.memory_total_bytes
                             ? human_bytes(static_cast<double>(*g.memory_used_bytes)) + " / " +
                                   human_bytes(static_cast<double>(*g.memory_total_bytes))
                             : "-";
    out += fmt::format("GPU {} {}  util {}%  mem {} (busy {}%)  SM {} MHz  {} W  {} C", g.index,
                       printable_utf8(g.name), optional_text(g.util_percent, "{:.0f}"), memory,
                       optional_text(g.memory_util_percent, "{:.0f}"), optional_text(g.sm_clock_mhz, "{:.0f}"),
                       optional_text(g.power_watts, "{:.0f}"), optional_text(g.temperature_c, "{:.0f}"));
    if (g.pcie_rx_bytes_per_s && g.pcie_tx_bytes_per_s) {
      out += fmt::format("  PCIe rx {}/s tx {}/s", human_bytes(*g.pcie_rx_bytes_per_s),
                         human_bytes(*g.pcie_tx_bytes_per_s));
    }
    out += '\n';
    for (const GpuProcessReading& p : g.processes) {
      out += fmt::format("      pid {:<8} mem {:>7}  sm {}%\n", p.pid,
                         p.memory_bytes ? human_bytes(static_cast<double>(*p.memory_bytes)) : "-",
                         optional_text(p.sm_util_percent, "{:.0f}"));
    }
  }
  if (s.gpus.empty() && options.verbose && !options.gpu_absent_reason.empty()) {
    out += "GPU   none: " + printable_utf8(options.gpu_absent_reason) + "\n";
  }
}

void append_processes(std::string& out, const SysmonSample& s) {
  if (s.processes.empty()) return;
  out += fmt::format("\n{:>8} {:>6} {:>8} {:>8} {:>9} {:>9} {:>4} {:>3} {:>8} {:>8}  {}\n", "PID", "CPU%",
                     "RSS", "PEAK", "READ/s", "WRITE/s", "THR", "D", "VCSW/s", "ICSW/s", "NAME");
  for (const ProcessSample& p : s.processes) {
    auto rate = [&](double value, bool valid) { return valid ? human_bytes(value) : std::string("-"); };
    bool io = p.has_rates && p.io;
    out += fmt::format("{:>8} {:>6} {:>8} {:>8} {:>9} {:>9} {:>4} {:>3} {:>8} {:>8}  {}\n", p.pid,
                       p.has_rates ? fmt::format("{:.1f}", p.cpu_percent) : "-",
                       human_bytes(static_cast<double>(p.rss_bytes)),
                       human_bytes(static_cast<double>(p.peak_rss_bytes)), rate(p.read_bytes_per_s, io),
                       rate(p.write_bytes_per_s, io), p.threads, p.disk_wait_threads,
                       p.has_rates ? fmt::format("{:.0f}", p.voluntary_switches_per_s) : "-",
                       p.has_rates ? fmt::format("{:.0f}", p.involuntary_switches_per_s) : "-",
                       printable_utf8(p.name));
  }
}

}  // namespace

std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f}{}", bytes, kUnits[unit]) : fmt::format("{:.1f}{}", bytes, kUnits[unit]);
}

std::string monitor_table(const SysmonSample& sample, const MonitorTableOptions& options) {
  std::string out = options.in_place ? kClearScreen : "";
  append_system(out, sample, options.verbose);
  append_gpus(out, sample, options);
  append_processes(out, sample);
  if (options.verbose && sample.unreadable > 0) {
    out += fmt::format("({} /proc entries could not be read so far)\n", sample.unreadable);
  }
  if (!options.in_place) out += '\n';  // a blank line between appended blocks
  return out;
}

}  // namespace stepscope
