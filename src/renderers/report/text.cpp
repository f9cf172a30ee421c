#include "renderers/report/text.hpp"

#include <set>

#include <fmt/format.h>

#include "importers/chrome_trace.hpp"
#include "renderers/escape.hpp"
#include "renderers/fitted_name.hpp"
#include "renderers/report/diagnosis_text.hpp"
#include "renderers/report/gpu_text.hpp"
#include "renderers/report/ops_text.hpp"
#include "renderers/report/steps_text.hpp"
#include "run/frame_label.hpp"
#include "run/trimmed_run.hpp"

namespace stepscope {

namespace {

std::string percent(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole))
               : "-";
}

// The times of one function table, in one unit picked from its whole: a
// trace of a few steps lasts milliseconds, where "0.00 s" would hide every row.
struct TimeUnit {
  double ns_per_unit;
  const char* name;
};

TimeUnit unit_for(int64_t whole_ns) {
  constexpr int64_t kSecond = 1'000'000'000;
  return whole_ns >= kSecond ? TimeUnit{1e9, "s"} : TimeUnit{1e6, "ms"};
}

std::string in_unit(int64_t ns, TimeUnit unit) {
  return fmt::format("{:.2f} {}", static_cast<double>(ns) / unit.ns_per_unit, unit.name);
}

void write_header(const Report& report, std::ostream& out) {
  const Run& run = *report.run;
  out << fmt::format("stepscope report: {}\n", printable_shortened(report.source, 200));
  if (auto cmd = run.metadata.find("command"); cmd != run.metadata.end()) {
    out << fmt::format("  command: {}\n", printable_shortened(cmd->second, 200));
  }
  if (auto period = run.sample_period_ns()) {
    out << fmt::format("  {} samples, one per {:.2f} ms per thread\n", run.samples.size(),
                       static_cast<double>(*period) / 1e6);
  }
  if (std::optional<Trimming> trimming = run_trimming(run)) out << "  " << describe_trimming(*trimming) << '\n';
}

void write_processes(const Report& report, std::ostream& out) {
  if (report.processes.empty()) return;
  const Run& run = *report.run;
  out << "\nProcesses (thread samples by state)\n";
  out << fmt::format("  {:>8} {:>8} {:>7} {:>7} {:>8} {:>7} {:>5} {:>5} {:>5}  {}\n", "pid", "parent",
                     "python", "threads", "samples", "running", "idle", "disk", "exit", "command");
  for (const ProcessSummary& p : report.processes) {
    if (p.role != ProcessRole::kHost) continue;
    out << fmt::format("  {:>8} {:>8} {:>7} {:>7} {:>8} {:>7} {:>5} {:>5} {:>5}  {}\n", p.pid,
                       p.parent_pid, p.python_version.empty() ? "-" : p.python_version, p.threads,
                       p.samples, percent(p.running, p.samples), percent(p.idle, p.samples),
                       percent(p.disk_wait, p.samples),
                       p.exit_status >= 0 ? std::to_string(p.exit_status) : "-",
                       printable_shortened(run.strings.get(p.command), 70));
  }
}

// A trace's device "processes" and Kineto's own tracks are no host
// processes: one line each kind, after the table.
void write_other_tracks(const Report& report, std::ostream& out) {
  // Kineto often names a device track after the host process: the name
  // then says nothing, the pid does.
  std::set<StringId> host_names;
  for (const ProcessSummary& p : report.processes) {
    if (p.role == ProcessRole::kHost) host_names.insert(p.command);
  }
  auto label = [&](const ProcessSummary& p) {
    std::string name = printable_shortened(report.run->strings.get(p.command), 40);
    // A pid the trace wrote as a string ("Spans") is known by that string.
    if (is_synthetic_id(p.pid) && p.command != StringTable::kEmpty) return fmt::format("\"{}\"", name);
    if (p.command == StringTable::kEmpty || host_names.count(p.command)) return fmt::format("pid {}", p.pid);
    return fmt::format("pid {} ({})", p.pid, name);
  };
  std::string devices, tracks;
  for (const ProcessSummary& p : report.processes) {
    if (p.role == ProcessRole::kDevice) {
      devices += fmt::format("{}{}: {} stream{}, {} events", devices.empty() ? "" : "; ", label(p), p.threads,
                             p.threads == 1 ? "" : "s", p.spans);
    } else if (p.role == ProcessRole::kTraceTrack) {
      tracks += (tracks.empty() ? "" : ", ") + label(p);
    }
  }
  if (!devices.empty()) out << "  devices (not host processes): " << devices << '\n';
  if (!tracks.empty()) out << "  trace tracks without host or device activity, left out: " << tracks << '\n';
}

void write_function_rows(const Report& report, const FunctionCosts& costs, std::ostream& out, size_t top) {
  out << fmt::format("  {:>6} {:>6} {:>10} {:>10}  {}\n", "self", "total", "self", "total",
                     "function (file)");
  const StringTable& strings = report.run->strings;
  TimeUnit unit = unit_for(costs.profile_ns);
  for (size_t i = 0; i < costs.functions.size() && i < top; ++i) {
    const FunctionCost& f = costs.functions[i];
    std::string name = fitted_name(shown_function(strings.get(f.function)), 60);
    if (f.file != StringTable::kEmpty) name += " (" + fitted_name(strings.get(f.file), 80) + ")";
    auto whole = static_cast<uint64_t>(costs.profile_ns);
    out << fmt::format("  {:>6} {:>6} {:>10} {:>10}  {}\n", percent(static_cast<uint64_t>(f.self_ns), whole),
                       percent(static_cast<uint64_t>(f.total_ns), whole), in_unit(f.self_ns, unit),
                       in_unit(f.total_ns, unit), name);
  }
}

const char* profile_basis(const Report& report) {
  return report.profile_source == ProfileSource::kSpans ? "span self time"
         : report.includes_idle                         ? "all thread samples"
                                                        : "samples of busy threads";
}

void write_functions(const Report& report, std::ostream& out, size_t top) {
  const FunctionCosts& costs = report.functions;
  if (costs.functions.empty()) return;
  out << fmt::format("\nTop functions by self time ({}, {} in all)\n", profile_basis(report),
                     in_unit(costs.profile_ns, unit_for(costs.profile_ns)));
  write_function_rows(report, costs, out, top);
}

// The step's phases as a bar of `width` letters, each phase in proportion.
std::string phase_bar(const ProcessSteps& p, size_t width) {
  static constexpr char kLetters[kStepPhaseCount] = {'D', 'F', 'B', 'O', '.'};
  std::string bar;
  double covered = 0;
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    covered += p.phase_fractions[i];
    size_t until = static_cast<size_t>(covered * static_cast<double>(width) + 0.5);
    while (bar.size() < std::min(until, width)) bar += kLetters[i];
  }
  return bar;
}

void write_glance(const Report& report, const TextStyle& style, std::ostream& out) {
  if (report.steps.empty()) return;
  const ProcessSteps& p = report.steps.processes[report.steps.primary];
  out << '\n' << style.bold("Throughput and step anatomy") << fmt::format(" (pid {}, steady steps)\n", p.pid);
  std::string rate = p.samples_per_sec ? fmt::format("{:.1f} samples/s", *p.samples_per_sec) : "- samples/s";
  if (p.tokens_per_sec) rate += fmt::format(", {:.1f} tokens/s", *p.tokens_per_sec);
  if (report.steps.origin == StepsOrigin::kProfilerSteps) rate = "unknown (a trace has no batch sizes)";
  out << fmt::format("  throughput  {}\n", rate);
  out << fmt::format("  step time   p50 {:.2f} ms, p90 {:.2f} ms, mean {:.2f} ms over {} steps\n", p.step_time.p50_ms,
                     p.step_time.p90_ms, p.step_time.mean_ms, p.steps.size() - p.warmup_steps);
  out << "  anatomy    ";
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    out << fmt::format(" {} {:.0f}%", step_phase_name(static_cast<StepPhase>(i)), 100 * p.phase_fractions[i]);
  }
  out << fmt::format("\n              [{}]  D data wait, F forward, B backward, O optimizer, . other\n",
                     phase_bar(p, 50));
}

// Those of the steady steps where a recording has them: what a slow step
// spends its time on, without the start-up before it.
void write_hottest(const Report& report, const TextStyle& style, std::ostream& out, size_t top) {
  const auto& in_steps = report.step_functions;
  const FunctionCosts& costs = in_steps ? in_steps->costs : report.functions;
  if (costs.functions.empty()) return;
  std::string what = in_steps ? fmt::format("self time during the {} steady steps of pid {}, {}; the whole run's below",
                                            in_steps->steps, in_steps->pid, profile_basis(report))
                              : fmt::format("self time, {}", profile_basis(report));
  out << '\n' << style.bold("Hottest functions") << " (" << what << ")\n";
  write_function_rows(report, costs, out, top);
}

}  // namespace

// The first screen is what a person needs to act on; the details follow.
void write_report_text(const Report& report, std::ostream& out, const ReportTextOptions& options) {
  TextStyle style(options.color);
  write_header(report, out);
  write_verdict(report.diagnosis, style, out);
  write_findings(report.diagnosis, style, out, options.detailed_findings);
  write_glance(report, style, out);
  write_hottest(report, style, out, options.hottest_functions);
  out << '\n' << style.bold("Details") << '\n';
  write_processes(report, out);
  write_other_tracks(report, out);
  write_steps_text(*report.run, report.steps, report.job, out);
  write_ops_text(*report.run, report.ops, out, options.top_functions);
  write_gpu_text(report.gpu, report.rank_comparison, out, options.top_functions);
  write_functions(report, out, options.top_functions);
  if (report.functions.functions.empty()) out << "\nNo samples or spans to profile.\n";
}

}  // namespace stepscope
