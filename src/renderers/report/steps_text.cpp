#include "renderers/report/steps_text.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "analyses/steps/stragglers.hpp"
#include "renderers/escape.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

std::string mib(std::optional<int64_t> bytes) {
  return bytes ? fmt::format("{:.1f} MiB", static_cast<double>(*bytes) / (1024.0 * 1024.0)) : "-";
}

std::string per_sec(std::optional<double> value, std::string_view unit) {
  return value ? fmt::format("{:.1f} {}/s", *value, unit) : fmt::format("- {}/s", unit);
}

std::string who(const ProcessSteps& p) {
  return p.rank ? fmt::format("rank {} (pid {})", *p.rank, p.pid) : fmt::format("pid {}", p.pid);
}

void write_phases(const ProcessSteps& p, std::ostream& out) {
  out << "  phases        ";
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    out << fmt::format(" {} {:.0f}%", step_phase_name(static_cast<StepPhase>(i)), 100 * p.phase_fractions[i]);
  }
  out << '\n';
}

void write_histogram(const ProcessSteps& p, std::ostream& out) {
  uint64_t most = 0;
  for (const HistogramBin& b : p.histogram) most = std::max(most, b.count);
  if (most == 0) return;
  out << "  step time histogram (steady steps)\n";
  for (const HistogramBin& b : p.histogram) {
    size_t bar = static_cast<size_t>(40.0 * static_cast<double>(b.count) / static_cast<double>(most));
    out << fmt::format("    {:>9.2f} - {:>9.2f} ms {:>6}  {}\n", b.low_ms, b.high_ms, b.count, std::string(bar, '#'));
  }
}

void write_functions(const Run& run, const char* title, uint64_t total, const std::vector<FunctionSamples>& functions,
                     std::ostream& out) {
  if (functions.empty() || total == 0) return;
  out << fmt::format("  {} ({} samples)\n", title, total);
  for (const FunctionSamples& f : functions) {
    std::string name = printable_utf8(shown_function(run.strings.get(f.function)));
    if (f.file != StringTable::kEmpty) name += " (" + printable_utf8(run.strings.get(f.file)) + ")";
    out << fmt::format("    {:>4.0f}%  {}\n", 100.0 * static_cast<double>(f.samples) / static_cast<double>(total), name);
  }
}

void write_process(const Run& run, const StepsAnalysis& steps, const ProcessSteps& p, std::ostream& out) {
  const size_t count = p.steps.size();
  const std::string warmup = p.warmup_steps == 0   ? "none left out as warm-up"
                             : p.warmup_steps == 1 ? "the first left out as warm-up"
                                                   : fmt::format("the first {} left out as warm-up", p.warmup_steps);
  out << fmt::format("\nSteps of {}: {} step{}, {}\n", who(p), count, count == 1 ? "" : "s", warmup);
  if (steps.origin == StepsOrigin::kProfilerSteps) out << "  from          " << trace_origin_note(p) << '\n';
  out << fmt::format("  throughput     {}, {}\n", per_sec(p.samples_per_sec, "samples"), per_sec(p.tokens_per_sec, "tokens"));
  out << fmt::format("  step time      p50 {:.2f} ms, p90 {:.2f} ms, p99 {:.2f} ms, mean {:.2f} ms\n",
                     p.step_time.p50_ms, p.step_time.p90_ms, p.step_time.p99_ms, p.step_time.mean_ms);
  out << fmt::format("  data wait      {:.0f}% of step time\n",
                     100 * p.phase_fractions[static_cast<size_t>(StepPhase::kDataWait)]);
  write_phases(p, out);
  out << fmt::format("  peak memory    host {}{}, device {}\n", mib(p.peak_host_bytes),
                     p.host_peak_per_step || !p.peak_host_bytes ? "" : " (process peak, not per step)",
                     mib(p.peak_device_bytes));
  write_histogram(p, out);
  const StepSampleAttribution& a = steps.attribution();
  write_functions(run, "waiting for data, main process: top functions", a.data_wait_samples, a.data_wait_functions, out);
  write_functions(run, "DataLoader workers, during batches: top functions", a.worker_samples, a.worker_functions, out);
}

std::string percent_or_dash(std::optional<double> share) {
  return share ? fmt::format("{:.0f}%", 100 * *share) : "-";
}

std::string ranks_heading(const JobRanks& job) {
  std::set<std::string> sources;
  for (const JobRank& r : job.ranks) sources.insert(r.source);
  std::string runs = sources.size() > 1 ? fmt::format(" in {} runs", sources.size()) : "";
  std::string marks;
  if (!job.waited_for.empty()) marks = "; waited for: the others wait for it in collectives";
  if (!job.slow.empty()) {
    marks += fmt::format("; slow: mean step above the median by more than {:.0f}% or 3 scaled MADs",
                         100 * kStragglerTolerance);
  }
  return fmt::format("\nRanks ({} processes with steps{}{})\n", job.ranks.size(), runs,
                     marks.empty() ? "; no straggler" : marks);
}

void write_ranks(const JobRanks& job, std::ostream& out) {
  if (job.ranks.size() < 2) return;
  out << ranks_heading(job);
  out << fmt::format("  {:>6} {:>16} {:>4} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9}  {}\n", "rank", "host", "node", "pid",
                     "steps", "p50 ms", "mean ms", "data wait", "coll wait", "top phase");
  const auto data_wait = static_cast<size_t>(StepPhase::kDataWait);
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const JobRank& r = job.ranks[i];
    const ProcessSteps& p = r.steps;
    std::string marks;
    if (job.is_waited_for(i)) marks += "  <- waited for";
    if (job.is_slow(i)) marks += "  <- slow";
    out << fmt::format("  {:>6} {:>16} {:>4} {:>8} {:>6} {:>9.2f} {:>9.2f} {:>9} {:>9}  {}{}\n",
                       p.rank ? std::to_string(*p.rank) : "-", r.host.empty() ? "-" : printable_utf8(r.host),
                       r.node_rank ? std::to_string(*r.node_rank) : "-", p.pid, p.steps.size(), p.step_time.p50_ms,
                       p.step_time.mean_ms, percent_or_dash(p.phase_fractions[data_wait]),
                       percent_or_dash(p.collective_wait_fraction), step_phase_name(top_phase(p)), marks);
  }
}

}  // namespace

std::string trace_origin_note(const ProcessSteps& p) {
  std::string text = "the trace's ProfilerStep#N ranges";
  if (p.last_range_left_out) {
    text += fmt::format(" ({} of {}: the last, cut short by the profiler, left out)", p.steps.size(), p.profiler_ranges);
  }
  text += "; phases from its annotations (docs/steps.md); throughput unknown: a trace has no batch sizes";
  if (!p.loader_iterator.empty()) text += "; DataLoader iterator " + printable_utf8(p.loader_iterator);
  return text;
}

std::string no_steps_reason(const Run& run) {
  if (auto format = run.metadata.find("source_format"); format != run.metadata.end() && format->second == "chrome_trace") {
    return "the trace has no ProfilerStep#N ranges (torch.profiler writes them when it is given a schedule "
           "and prof.step() is called after each step)";
  }
  auto hooks = run.metadata.find("hooks");
  if (hooks == run.metadata.end()) {
    return "the run was not recorded with stepscope's hooks (attach mode, an imported trace, "
           "or an older recorder)";
  }
  if (hooks->second != "on") return "the hooks were " + printable_utf8(hooks->second);
  return "no process imported torch and ran an optimizer step, or called stepscope.step()";
}

StepPhase top_phase(const ProcessSteps& p) {
  auto most = std::max_element(p.phase_fractions.begin(), p.phase_fractions.end());
  return static_cast<StepPhase>(most - p.phase_fractions.begin());
}

void write_steps_text(const Run& run, const StepsAnalysis& steps, const JobRanks& job, std::ostream& out) {
  if (steps.empty()) {
    out << "\nSteps: none recorded: " << no_steps_reason(run) << ".\n";
    return;
  }
  write_process(run, steps, steps.processes[steps.primary], out);
  write_ranks(job, out);
}

}  // namespace stepscope
