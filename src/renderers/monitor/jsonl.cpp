#include "renderers/monitor/jsonl.hpp"

#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

void append_cpu(JsonObject& o, const CpuPercent& cpu, const char* busy_key) {
  o.number(busy_key, cpu.busy).number("cpu_user_percent", cpu.user);
  o.number("cpu_system_percent", cpu.system).number("cpu_iowait_percent", cpu.iowait);
}

void append_system_fields(std::string& out, const SystemSample& s) {
  JsonObject o(out);
  append_cpu(o, s.cpu, "cpu_percent");
  o.field("cores");
  append_json_array(out, s.cores, [](std::string& a, const CoreSample& core) {
    JsonObject c(a);
    c.number("cpu", core.id);
    append_cpu(c, core.percent, "cpu_percent");
  });
  o.number_or_null("load_1m", s.load ? std::optional(s.load->one) : std::nullopt);
  o.number_or_null("load_5m", s.load ? std::optional(s.load->five) : std::nullopt);
  o.number_or_null("load_15m", s.load ? std::optional(s.load->fifteen) : std::nullopt);
  const auto& m = s.memory;
  o.number_or_null("memory_total_bytes", m ? std::optional(m->total_bytes) : std::nullopt);
  o.number_or_null("memory_used_bytes", m ? std::optional(m->used_bytes) : std::nullopt);
  o.number_or_null("memory_available_bytes", m ? std::optional(m->available_bytes) : std::nullopt);
  o.number_or_null("memory_cached_bytes", m ? std::optional(m->cached_bytes) : std::nullopt);
  // The memory cgroup: in a container, the memory there really is (null: none, or no limit).
  const auto& c = s.cgroup_memory;
  o.number_or_null("cgroup_memory_limit_bytes", c ? c->limit_bytes : std::nullopt);
  o.number_or_null("cgroup_memory_usage_bytes", c ? std::optional(c->usage_bytes) : std::nullopt);
  o.number_or_null("cgroup_memory_working_set_bytes", c ? std::optional(c->working_set_bytes) : std::nullopt);
  o.field("disks");
  append_json_array(out, s.disks, [](std::string& a, const DiskRates& d) {
    JsonObject(a).text("name", d.name).number("read_bytes_per_s", d.read_bytes_per_s)
        .number("write_bytes_per_s", d.write_bytes_per_s).number("util_percent", d.util_percent);
  });
  o.field("networks");
  append_json_array(out, s.networks, [](std::string& a, const NetRates& n) {
    JsonObject(a).text("name", n.name).number("rx_bytes_per_s", n.rx_bytes_per_s)
        .number("tx_bytes_per_s", n.tx_bytes_per_s);
  });
}

void append_process(std::string& out, const ProcessSample& p) {
  JsonObject o(out);
  o.number("pid", p.pid).text("name", p.name);
  o.number_or_null("cpu_percent", p.has_rates ? std::optional(p.cpu_percent) : std::nullopt);
  o.number("rss_bytes", p.rss_bytes).number("peak_rss_bytes", p.peak_rss_bytes);
  o.number_or_null("read_bytes", p.io ? std::optional(p.io->read_bytes) : std::nullopt);
  o.number_or_null("write_bytes", p.io ? std::optional(p.io->write_bytes) : std::nullopt);
  bool io_rates = p.has_rates && p.io;
  o.number_or_null("read_bytes_per_s", io_rates ? std::optional(p.read_bytes_per_s) : std::nullopt);
  o.number_or_null("write_bytes_per_s", io_rates ? std::optional(p.write_bytes_per_s) : std::nullopt);
  o.number("threads", p.threads).number("disk_wait_threads", p.disk_wait_threads);
  o.number("voluntary_switches", p.voluntary_switches)
      .number("involuntary_switches", p.involuntary_switches);
}

void append_gpu(std::string& out, const GpuReading& g) {
  JsonObject o(out);
  o.number("index", g.index).text("name", g.name);
  o.number_or_null("util_percent", g.util_percent);
  o.number_or_null("memory_util_percent", g.memory_util_percent);
  o.number_or_null("memory_used_bytes", g.memory_used_bytes);
  o.number_or_null("memory_total_bytes", g.memory_total_bytes);
  o.number_or_null("sm_clock_mhz", g.sm_clock_mhz);
  o.number_or_null("power_watts", g.power_watts);
  o.number_or_null("temperature_c", g.temperature_c);
  o.number_or_null("pcie_rx_bytes_per_s", g.pcie_rx_bytes_per_s);
  o.number_or_null("pcie_tx_bytes_per_s", g.pcie_tx_bytes_per_s);
  o.field("processes");
  append_json_array(out, g.processes, [](std::string& a, const GpuProcessReading& p) {
    JsonObject po(a);
    po.number("pid", p.pid);
    po.number_or_null("memory_bytes", p.memory_bytes);
    po.number_or_null("sm_util_percent", p.sm_util_percent);
  });
}

}  // namespace

std::string monitor_jsonl_line(const SysmonSample& sample) {
  std::string out;
  {
    JsonObject o(out);
    o.number("ts", static_cast<double>(sample.unix_ns) / 1e9);
    o.number("interval_s", sample.interval_s);
    o.field("system");
    append_system_fields(out, sample.system);
    o.field("processes");
    append_json_array(out, sample.processes, append_process);
    o.field("gpus");
    append_json_array(out, sample.gpus, append_gpu);
    o.number("unreadable", sample.unreadable);
  }
  out += '\n';
  return out;
}

}  // namespace stepscope
