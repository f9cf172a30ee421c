#include "renderers/report/gpu_text.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "renderers/escape.hpp"
#include "renderers/fitted_name.hpp"

namespace stepscope {

namespace {

std::string ms(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }
std::string us(double ns) { return fmt::format("{:.1f} us", ns / 1e3); }

std::string share(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

// " rank N" where the input says its rank; nothing for a run or trace of a job of one process.
std::string rank_label(const GpuRank& rank) { return rank.rank ? fmt::format(" rank {}", *rank.rank) : std::string(); }

void write_temporal(const GpuRank& rank, std::ostream& out) {
  const GpuTemporal& t = rank.temporal;
  out << fmt::format("  span {}: busy {} ({}), idle {} ({}), compute {} ({}), non-compute {} ({})\n",
                     ms(static_cast<double>(t.span_ns)), ms(static_cast<double>(t.busy_ns)),
                     share(t.busy_ns, t.span_ns), ms(static_cast<double>(t.idle_ns)), share(t.idle_ns, t.span_ns),
                     ms(static_cast<double>(t.compute_ns)), share(t.compute_ns, t.span_ns),
                     ms(static_cast<double>(t.non_compute_ns)), share(t.non_compute_ns, t.span_ns));
  if (t.communication_ns > 0 || t.memory_ns > 0) {
    out << fmt::format("  communication {}, memory {}", ms(static_cast<double>(t.communication_ns)),
                       ms(static_cast<double>(t.memory_ns)));
    if (t.comm_comp_overlap) out << fmt::format(", communication overlapped by compute {:.1f}%", 100 * *t.comm_comp_overlap);
    out << '\n';
  }
}

void write_idle(const GpuRank& rank, std::ostream& out) {
  out << fmt::format("  {:>8} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12}\n", "device", "stream", "events", "idle",
                     "host wait", "kernel wait", "other");
  for (const StreamIdle& s : rank.idle_by_stream) {
    out << fmt::format("  {:>8} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12}\n", s.pid, s.tid, s.events,
                       ms(static_cast<double>(s.idle_ns())), ms(static_cast<double>(s.host_wait_ns)),
                       ms(static_cast<double>(s.kernel_wait_ns)), ms(static_cast<double>(s.other_ns)));
  }
}

void write_kernels(const GpuRank& rank, std::ostream& out, size_t top) {
  out << fmt::format("  {:<14} {:>8} {:>12} {:>10} {:>10} {:>10}\n", "class", "count", "total", "mean", "min", "max");
  for (size_t i = 0; i < kKernelClassCount; ++i) {
    const DurationStats& d = rank.kernels.by_class[i];
    if (d.count == 0) continue;
    out << fmt::format("  {:<14} {:>8} {:>12} {:>10} {:>10} {:>10}\n", kernel_class_name(static_cast<KernelClass>(i)),
                       d.count, ms(static_cast<double>(d.total_ns)), us(d.mean_ns()),
                       us(static_cast<double>(d.min_ns)), us(static_cast<double>(d.max_ns)));
  }
  out << fmt::format("  top kernels by total time:\n  {:>8} {:>12} {:>10}  {}\n", "count", "total", "mean", "name");
  for (size_t i = 0; i < rank.kernels.by_name.size() && i < top; ++i) {
    const KernelNameStats& k = rank.kernels.by_name[i];
    out << fmt::format("  {:>8} {:>12} {:>10}  {}\n", k.time.count, ms(static_cast<double>(k.time.total_ns)),
                       us(k.time.mean_ns()), fitted_name(k.name, 100));
  }
}

void write_launch_and_memcpy(const GpuRank& rank, std::ostream& out) {
  const GpuLaunch& l = rank.launch;
  if (l.launches > 0) {
    out << fmt::format(
        "  launches {}: CPU call mean {} (p95 {}), launch delay mean {} (p95 {}, max {}), "
        "{} shorter than their launch call ({}), {} calls > 50 us, {} delays > 100 us\n",
        l.launches, us(l.cpu_duration.mean_ns), us(static_cast<double>(l.cpu_duration.p95_ns)),
        us(l.launch_delay.mean_ns), us(static_cast<double>(l.launch_delay.p95_ns)),
        us(static_cast<double>(l.launch_delay.max_ns)), l.tiny,
        share(static_cast<int64_t>(l.tiny), static_cast<int64_t>(l.launches)), l.runtime_outliers, l.delay_outliers);
  }
  for (const MemcpyDirection& d : rank.memcpy.directions) {
    out << fmt::format("  {:<8} {:>6} ops {:>12} {:>14}", d.direction, d.count, ms(static_cast<double>(d.total_ns)),
                       d.bytes > 0 ? fmt::format("{} bytes", d.bytes) : "size unknown");
    if (auto bw = d.bandwidth_gbps()) out << fmt::format(" {:>8.2f} GB/s", *bw);
    // What pageable_memcpy and small_memcpy read; memsets are never either.
    if (d.pageable > 0) out << fmt::format(", {} pageable ({})", d.pageable, ms(static_cast<double>(d.pageable_ns)));
    if (d.small > 0) {
      out << fmt::format(", {} small < {} KiB ({})", d.small, kSmallMemcpyBytes / 1024, ms(static_cast<double>(d.small_ns)));
    }
    out << '\n';
  }
}

void write_comparison(const GpuAnalysis& gpu, const RankComparison& comparison, std::ostream& out) {
  // Runs without device activity have no device figures to compare.
  bool any = std::any_of(comparison.metrics.begin(), comparison.metrics.end(),
                         [](const RankMetric& metric) { return metric.median_ns.has_value(); });
  if (!any) return;
  out << fmt::format("\nRanks compared ({} traces; straggler: above the median by more than {:.0f}% or 3 scaled MADs)\n",
                     gpu.ranks.size(), 100 * kStragglerTolerance);
  for (const RankMetric& metric : comparison.metrics) {
    if (!metric.median_ns) continue;
    out << fmt::format("  {}: median {}", metric.name, ms(*metric.median_ns));
    if (metric.stragglers.empty()) out << ", no straggler";
    for (size_t i : metric.stragglers) {
      out << fmt::format(", straggler{} ({}: {})", rank_label(gpu.ranks[i]), fitted_name(gpu.ranks[i].source, 80),
                         ms(*metric.values[i]));
    }
    out << '\n';
  }
}

}  // namespace

void write_gpu_text(const GpuAnalysis& gpu, const std::optional<RankComparison>& comparison,
                    std::ostream& out, size_t top) {
  for (const GpuRank& rank : gpu.ranks) {
    if (rank.events == 0) continue;
    out << fmt::format("\nDevice activity{} ({}): {} events", rank.rank ? "," + rank_label(rank) : "",
                       fitted_name(rank.source, 120), rank.events);
    if (rank.complete_steps_only) {
      out << fmt::format(", complete steps only ({} of {} ProfilerSteps; {} events of the last step left out)",
                         rank.profiler_steps - 1, rank.profiler_steps, rank.left_out);
    }
    out << '\n';
    write_temporal(rank, out);
    write_idle(rank, out);
    write_kernels(rank, out, top);
    write_launch_and_memcpy(rank, out);
  }
  if (comparison) write_comparison(gpu, *comparison, out);
}

}  // namespace stepscope
