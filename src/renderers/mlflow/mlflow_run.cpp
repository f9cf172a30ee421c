#include "renderers/mlflow/mlflow_run.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analyses/ranks.hpp"
#include "renderers/escape.hpp"
#include "run/run_window.hpp"

namespace stepscope {

namespace {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr double kNsPerSec = 1e9;
// Times below this are not Unix times of a trace (2001-09-09 in ns).
constexpr int64_t kEpochNsFloor = 1'000'000'000'000'000'000;

std::string metadata_text(const Run& run, const std::string& key) {
  auto it = run.metadata.find(key);
  return it == run.metadata.end() ? std::string() : it->second;
}

// Run-clock ns to Unix ms; a run that cannot be placed is placed so that its
// last moment is now.
struct UnixClock {
  int64_t offset_ns = 0;
  int64_t ms(int64_t run_ns) const { return (run_ns + offset_ns) / kNsPerMs; }
};

UnixClock unix_clock(const Run& run, int64_t last_ns, const MlflowRunFacts& facts) {
  if (auto offset = unix_minus_run_clock_ns(run)) return {*offset};
  return {facts.now_unix_ms * kNsPerMs - last_ns};
}

void add_param(MlflowPairs& params, std::string key, std::string_view value) {
  if (!value.empty()) params.emplace_back(std::move(key), printable_shortened(value, kMlflowMaxParamBytes));
}

// What the hooks of `pid` said, else what any process's hooks said.
std::string hooks_fact(const Run& run, int64_t pid, std::string_view key) {
  if (auto fact = process_fact(run, pid, key)) return *fact;
  for (const Process& process : run.processes) {
    if (auto fact = process_fact(run, process.pid, key)) return *fact;
  }
  return {};
}

MlflowPairs params_of(const Report& report, const MlflowRunFacts& facts) {
  const Run& run = *report.run;
  int64_t pid = report.steps.empty() ? 0 : report.steps.processes[report.steps.primary].pid;
  MlflowPairs params;
  add_param(params, "command", metadata_text(run, "command"));
  add_param(params, "source", report.source);
  add_param(params, "host", metadata_text(run, "host"));
  add_param(params, "git_commit", facts.git_commit);
  add_param(params, "python", hooks_fact(run, pid, "python"));
  add_param(params, "torch", hooks_fact(run, pid, "torch"));
  add_param(params, "world_size", hooks_fact(run, pid, "world_size"));
  add_param(params, "dataloader", hooks_fact(run, pid, "dataloader"));
  add_param(params, "rate_hz", metadata_text(run, "rate_hz"));
  add_param(params, "recorder", metadata_text(run, "recorder"));
  add_param(params, "steps_origin", report.steps.empty() ? "" : steps_origin_name(report.steps.origin));
  for (int gpu = 0; gpu < 64; ++gpu) {
    std::string name = metadata_text(run, fmt::format("sysmon_gpu.{}.name", gpu));
    if (name.empty()) break;
    add_param(params, fmt::format("gpu.{}", gpu), name);
  }
  return params;
}

MlflowPairs tags_of(const Report& report, const MlflowRunFacts& facts) {
  MlflowPairs tags;
  auto add = [&tags](std::string key, std::string_view value) {
    if (!value.empty()) tags.emplace_back(std::move(key), printable_shortened(value, kMlflowMaxTagBytes));
  };
  // MLflow's own tags, which its UI shows as the run's source and commit.
  add("mlflow.source.name", metadata_text(*report.run, "command"));
  add("mlflow.source.git.commit", facts.git_commit);
  const std::vector<Finding>& findings = report.diagnosis.findings;
  if (findings.empty()) {
    add("stepscope.verdict", report.diagnosis.note);
    return tags;
  }
  const Finding& top = findings.front();
  add("stepscope.verdict", top.title);
  add("stepscope.top_finding", top.id);
  if (top.expected_speedup) add("stepscope.expected_speedup", fmt::format("{:.2f}", *top.expected_speedup));
  std::string ids;
  for (const Finding& f : findings) ids += (ids.empty() ? "" : ",") + f.id;
  add("stepscope.findings", ids);
  return tags;
}

// Each phase some step measured, except "other" (the rest), which counts
// when any other does.
std::array<bool, kStepPhaseCount> measured_phases(const ProcessSteps& process) {
  std::array<bool, kStepPhaseCount> measured{};
  for (const StepRecord& step : process.steps) {
    for (size_t phase = 0; phase + 1 < kStepPhaseCount; ++phase) measured[phase] |= step.phase_ns[phase] > 0;
  }
  measured[kStepPhaseCount - 1] = std::find(measured.begin(), measured.end(), true) != measured.end();
  return measured;
}

void add_step_metrics(const ProcessSteps& process, const UnixClock& clock, std::vector<MlflowMetric>& out) {
  std::array<bool, kStepPhaseCount> phases = measured_phases(process);
  int64_t ordinal = 0;
  for (const StepRecord& step : process.steps) {
    ++ordinal;
    int64_t at = clock.ms(step.end_ns);
    auto add = [&](std::string key, double value) { out.push_back({std::move(key), value, at, ordinal}); };
    double seconds = static_cast<double>(step.time_ns()) / kNsPerSec;
    add("step_time_ms", static_cast<double>(step.time_ns()) / kNsPerMs);
    if (phases[static_cast<size_t>(StepPhase::kDataWait)]) {
      add("data_wait_ms", static_cast<double>(step.phase_ns[static_cast<size_t>(StepPhase::kDataWait)]) / kNsPerMs);
    }
    for (size_t phase = 0; phase < kStepPhaseCount; ++phase) {
      if (!phases[phase] || step.time_ns() <= 0) continue;
      add(fmt::format("{}_share", step_phase_name(static_cast<StepPhase>(phase))),
          static_cast<double>(step.phase_ns[phase]) / static_cast<double>(step.time_ns()));
    }
    if (step.samples >= 0 && seconds > 0) add("samples_per_sec", static_cast<double>(step.samples) / seconds);
    if (step.tokens >= 0 && seconds > 0) add("tokens_per_sec", static_cast<double>(step.tokens) / seconds);
    if (step.host_peak_bytes >= 0) add("peak_host_memory_bytes", static_cast<double>(step.host_peak_bytes));
    if (step.device_peak_bytes >= 0) add("peak_device_memory_bytes", static_cast<double>(step.device_peak_bytes));
  }
}

void add_summary_metrics(const Report& report, int64_t at_ms, std::vector<MlflowMetric>& out) {
  auto add = [&](std::string_view key, double value) {
    if (std::isfinite(value)) out.push_back({fmt::format("summary/{}", key), value, at_ms, 0});
  };
  auto add_optional = [&](std::string_view key, auto value) {
    if (value) add(key, static_cast<double>(*value));
  };
  const std::vector<Finding>& findings = report.diagnosis.findings;
  add("findings", static_cast<double>(findings.size()));
  if (!findings.empty()) add_optional("expected_speedup", findings.front().expected_speedup);
  if (report.steps.empty()) return;
  const ProcessSteps& process = report.steps.processes[report.steps.primary];
  add("steps", static_cast<double>(process.steps.size()));
  add("warmup_steps", static_cast<double>(process.warmup_steps));
  if (process.steps.size() <= process.warmup_steps) return;
  add("step_time_mean_ms", process.step_time.mean_ms);
  add("step_time_p50_ms", process.step_time.p50_ms);
  add("step_time_p90_ms", process.step_time.p90_ms);
  add("step_time_p99_ms", process.step_time.p99_ms);
  add_optional("samples_per_sec", process.samples_per_sec);
  add_optional("tokens_per_sec", process.tokens_per_sec);
  std::array<bool, kStepPhaseCount> phases = measured_phases(process);
  for (size_t phase = 0; phase < kStepPhaseCount; ++phase) {
    if (phases[phase]) {
      add(fmt::format("{}_share", step_phase_name(static_cast<StepPhase>(phase))), process.phase_fractions[phase]);
    }
  }
  add_optional("peak_host_memory_bytes", process.peak_host_bytes);
  add_optional("peak_device_memory_bytes", process.peak_device_bytes);
}

}  // namespace

std::optional<int64_t> unix_minus_run_clock_ns(const Run& run) {
  auto unix_start = run.metadata_int("start_unix_ns");
  auto clock_start = run.metadata_int("start_clock_ns");
  if (unix_start && clock_start) return *unix_start - *clock_start;
  if (metadata_text(run, "clock") != "trace") return std::nullopt;
  if (auto base = run.metadata_int("baseTimeNanoseconds")) return *base;
  // Older Kineto traces: epoch microseconds, already Unix times.
  if (!run.spans.empty() && run.spans.front().start_ns >= kEpochNsFloor) return 0;
  return std::nullopt;
}

MlflowRunContent mlflow_run_content(const Report& report, const MlflowRunFacts& facts) {
  MlflowRunContent content;
  const ProcessSteps* process = report.steps.empty() ? nullptr : &report.steps.processes[report.steps.primary];
  TimeRange extent = run_extent(*report.run).value_or(TimeRange{});
  UnixClock clock = unix_clock(*report.run, extent.to_ns, facts);
  if (process) add_step_metrics(*process, clock, content.metrics);
  auto recorded_start = report.run->metadata_int("start_unix_ns");
  content.start_ms = recorded_start ? *recorded_start / kNsPerMs : clock.ms(extent.from_ns);
  content.end_ms = std::max(content.start_ms, clock.ms(extent.to_ns));
  add_summary_metrics(report, content.end_ms, content.metrics);
  content.params = params_of(report, facts);
  content.tags = tags_of(report, facts);
  return content;
}

}  // namespace stepscope
