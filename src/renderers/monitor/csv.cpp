#include "renderers/monitor/csv.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

std::string decimal(double value) { return fmt::format("{:.1f}", value); }
std::string integer(uint64_t value) { return std::to_string(value); }

template <typename T, typename Format>
std::string optional_cell(const std::optional<T>& value, Format format) {
  return value ? format(*value) : std::string();
}

// A cell quoted as RFC 4180 asks when it holds a separator or a quote.
std::string csv_cell(const std::string& text) {
  std::string printable = printable_utf8(text);
  if (printable.find_first_of(",\"") == std::string::npos) return printable;
  std::string quoted = "\"";
  for (char c : printable) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void add_tree(std::vector<std::pair<std::string, std::string>>& cells, const SysmonSample& s) {
  double cpu = 0, read = 0, write = 0;
  uint64_t rss = 0, threads = 0, disk_wait = 0;
  for (const ProcessSample& p : s.processes) {
    cpu += p.cpu_percent;
    read += p.read_bytes_per_s;
    write += p.write_bytes_per_s;
    rss += p.rss_bytes;
    threads += p.threads;
    disk_wait += p.disk_wait_threads;
  }
  cells.emplace_back("tree_processes", integer(s.processes.size()));
  cells.emplace_back("tree_cpu_percent", decimal(cpu));
  cells.emplace_back("tree_rss_bytes", integer(rss));
  cells.emplace_back("tree_read_bytes_per_s", decimal(read));
  cells.emplace_back("tree_write_bytes_per_s", decimal(write));
  cells.emplace_back("tree_threads", integer(threads));
  cells.emplace_back("tree_disk_wait_threads", integer(disk_wait));
}

void add_gpu(std::vector<std::pair<std::string, std::string>>& cells, const GpuReading& g) {
  std::string prefix = fmt::format("gpu{}_", g.index);
  cells.emplace_back(prefix + "util_percent", optional_cell(g.util_percent, decimal));
  cells.emplace_back(prefix + "memory_util_percent", optional_cell(g.memory_util_percent, decimal));
  cells.emplace_back(prefix + "memory_used_bytes", optional_cell(g.memory_used_bytes, integer));
  cells.emplace_back(prefix + "memory_total_bytes", optional_cell(g.memory_total_bytes, integer));
  cells.emplace_back(prefix + "sm_clock_mhz", optional_cell(g.sm_clock_mhz, decimal));
  cells.emplace_back(prefix + "power_watts", optional_cell(g.power_watts, decimal));
  cells.emplace_back(prefix + "temperature_c", optional_cell(g.temperature_c, decimal));
}

}  // namespace

MonitorCsv::Cells MonitorCsv::cells(const SysmonSample& s) const {
  Cells c;
  const SystemSample& sys = s.system;
  c.emplace_back("timestamp", fmt::format("{:.3f}", static_cast<double>(s.unix_ns) / 1e9));
  c.emplace_back("cpu_percent", decimal(sys.cpu.busy));
  c.emplace_back("cpu_user_percent", decimal(sys.cpu.user));
  c.emplace_back("cpu_system_percent", decimal(sys.cpu.system));
  c.emplace_back("cpu_iowait_percent", decimal(sys.cpu.iowait));
  c.emplace_back("load_1m", sys.load ? fmt::format("{:.2f}", sys.load->one) : "");
  c.emplace_back("memory_used_bytes", sys.memory ? integer(sys.memory->used_bytes) : "");
  c.emplace_back("memory_available_bytes", sys.memory ? integer(sys.memory->available_bytes) : "");
  c.emplace_back("memory_cached_bytes", sys.memory ? integer(sys.memory->cached_bytes) : "");
  if (with_tree_) add_tree(c, s);
  for (const DiskRates& d : sys.disks) {
    c.emplace_back("disk_" + d.name + "_read_bytes_per_s", decimal(d.read_bytes_per_s));
    c.emplace_back("disk_" + d.name + "_write_bytes_per_s", decimal(d.write_bytes_per_s));
    c.emplace_back("disk_" + d.name + "_util_percent", decimal(d.util_percent));
  }
  for (const NetRates& n : sys.networks) {
    c.emplace_back("net_" + n.name + "_rx_bytes_per_s", decimal(n.rx_bytes_per_s));
    c.emplace_back("net_" + n.name + "_tx_bytes_per_s", decimal(n.tx_bytes_per_s));
  }
  for (const GpuReading& g : s.gpus) add_gpu(c, g);
  return c;
}

std::string MonitorCsv::rows(const SysmonSample& sample) {
  Cells c = cells(sample);
  std::string out;
  if (columns_.empty()) {
    for (const auto& [column, value] : c) columns_.push_back(column);
    for (size_t i = 0; i < columns_.size(); ++i) out += (i ? "," : "") + csv_cell(columns_[i]);
    out += '\n';
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    auto it = std::find_if(c.begin(), c.end(), [&](const auto& cell) { return cell.first == columns_[i]; });
    out += (i ? "," : "") + (it == c.end() ? std::string() : csv_cell(it->second));
  }
  out += '\n';
  return out;
}

}  // namespace stepscope
