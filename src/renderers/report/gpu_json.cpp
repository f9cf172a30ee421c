#include "renderers/report/gpu_json.hpp"

#include <algorithm>

#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }
double us(double ns) { return ns / 1000.0; }

void append_temporal(const GpuTemporal& t, std::string& out) {
  JsonObject o(out);
  o.number("span_us", us(t.span_ns)).number("busy_us", us(t.busy_ns)).number("idle_us", us(t.idle_ns));
  o.number("compute_us", us(t.compute_ns)).number("non_compute_us", us(t.non_compute_ns));
  o.number("communication_us", us(t.communication_ns)).number("memory_us", us(t.memory_ns));
  o.number_or_null("comm_comp_overlap", t.comm_comp_overlap);
}

void append_idle(const std::vector<StreamIdle>& streams, std::string& out) {
  append_json_array(out, streams, [](std::string& s, const StreamIdle& stream) {
    JsonObject o(s);
    o.number("pid", stream.pid).number("stream", stream.tid).number("events", stream.events);
    o.number("span_us", us(stream.span_ns)).number("idle_us", us(stream.idle_ns()));
    o.number("host_wait_us", us(stream.host_wait_ns)).number("kernel_wait_us", us(stream.kernel_wait_ns));
    o.number("other_us", us(stream.other_ns));
  });
}

void append_stats(JsonObject& o, const DurationStats& d) {
  o.number("count", d.count).number("total_us", us(d.total_ns)).number("mean_us", us(d.mean_ns()));
  o.number("min_us", us(d.min_ns)).number("max_us", us(d.max_ns));
}

void append_kernels(const GpuKernels& kernels, std::string& out) {
  append_json_array(out, kernels.by_name, [&](std::string& s, const KernelNameStats& k) {
    JsonObject o(s);
    o.text("name", k.name).text("class", kernel_class_name(k.kind));
    append_stats(o, k.time);
  });
}

void append_classes(const GpuKernels& kernels, std::string& out) {
  out += '[';
  bool first = true;
  for (size_t i = 0; i < kKernelClassCount; ++i) {
    if (kernels.by_class[i].count == 0) continue;
    if (!first) out += ',';
    first = false;
    JsonObject o(out);
    o.text("class", kernel_class_name(static_cast<KernelClass>(i)));
    append_stats(o, kernels.by_class[i]);
  }
  out += ']';
}

void append_distribution(JsonObject& o, std::string_view key, const Distribution& d, std::string& out) {
  o.field(key);
  JsonObject dist(out);
  dist.number("mean_us", us(d.mean_ns)).number("p50_us", us(d.p50_ns));
  dist.number("p95_us", us(d.p95_ns)).number("max_us", us(d.max_ns));
}

void append_launch(const GpuLaunch& launch, std::string& out) {
  JsonObject o(out);
  o.number("launches", launch.launches);
  append_distribution(o, "cpu_duration", launch.cpu_duration, out);
  append_distribution(o, "device_duration", launch.device_duration, out);
  append_distribution(o, "launch_delay", launch.launch_delay, out);
  o.number("tiny_kernels", launch.tiny);
  o.number_or_null("tiny_share",
                   launch.launches ? std::optional<double>(static_cast<double>(launch.tiny) /
                                                           static_cast<double>(launch.launches))
                                   : std::nullopt);
  o.number("runtime_outliers", launch.runtime_outliers).number("delay_outliers", launch.delay_outliers);
}

void append_memcpy(const GpuMemcpy& memcpy, std::string& out) {
  JsonObject o(out);
  o.field("directions");
  append_json_array(out, memcpy.directions, [](std::string& s, const MemcpyDirection& d) {
    JsonObject dir(s);
    dir.text("direction", d.direction).number("count", d.count).number("total_us", us(d.total_ns));
    dir.number("bytes", d.bytes);
    dir.number("pageable", d.pageable).number("pageable_us", us(d.pageable_ns));
    dir.number("small", d.small).number("small_us", us(d.small_ns));
    dir.number_or_null("bandwidth_gbps", d.bandwidth_gbps());
  });
}

void append_rank(const GpuRank& rank, std::string& out) {
  JsonObject o(out);
  o.number_or_null("rank", rank.rank);
  o.text("source", rank.source).number("device_events", rank.events);
  o.number("profiler_steps", rank.profiler_steps).boolean("complete_steps_only", rank.complete_steps_only);
  o.number("left_out_events", rank.left_out);
  o.number_or_null("step_mean_us",
                   rank.step_mean_ns ? std::optional<double>(us(*rank.step_mean_ns)) : std::nullopt);
  if (rank.events == 0) {  // no device activity: no figures rather than zeros
    o.literal("temporal", "null").literal("idle_by_stream", "[]").literal("kernels", "[]");
    o.literal("kernel_classes", "[]").literal("launch", "null").literal("memcpy", "null");
    return;
  }
  o.field("temporal");
  append_temporal(rank.temporal, out);
  o.field("idle_by_stream");
  append_idle(rank.idle_by_stream, out);
  o.field("kernels");
  append_kernels(rank.kernels, out);
  o.field("kernel_classes");
  append_classes(rank.kernels, out);
  o.field("launch");
  append_launch(rank.launch, out);
  o.field("memcpy");
  append_memcpy(rank.memcpy, out);
}

void append_comparison(const GpuAnalysis& gpu, const RankComparison& comparison, std::string& out) {
  JsonObject o(out);
  o.number("tolerance", kStragglerTolerance);
  o.field("metrics");
  append_json_array(out, comparison.metrics, [&](std::string& s, const RankMetric& metric) {
    JsonObject m(s);
    m.text("metric", metric.name);
    m.number_or_null("median_us", metric.median_ns ? std::optional<double>(us(*metric.median_ns)) : std::nullopt);
    m.number_or_null("threshold_us",
                     metric.threshold_ns ? std::optional<double>(us(*metric.threshold_ns)) : std::nullopt);
    m.field("values");
    s += '[';
    for (size_t i = 0; i < metric.values.size(); ++i) {
      if (i) s += ',';
      JsonObject v(s);
      v.number_or_null("rank", gpu.ranks[i].rank);
      v.text("source", gpu.ranks[i].source);
      v.number_or_null("value_us",
                       metric.values[i] ? std::optional<double>(us(*metric.values[i])) : std::nullopt);
      v.boolean("straggler",
                std::find(metric.stragglers.begin(), metric.stragglers.end(), i) != metric.stragglers.end());
    }
    s += ']';
  });
}

}  // namespace

void append_gpu_json(const GpuAnalysis& gpu,
                     const std::optional<RankComparison>& comparison, std::string& out) {
  JsonObject o(out);
  o.field("ranks");
  out += '[';
  for (size_t i = 0; i < gpu.ranks.size(); ++i) {
    if (i) out += ',';
    append_rank(gpu.ranks[i], out);
  }
  out += ']';
  if (comparison) {
    o.field("comparison");
    append_comparison(gpu, *comparison, out);
  }
}

}  // namespace stepscope
