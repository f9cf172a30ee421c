#include "analyses/report.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "analyses/diagnosis/rank_straggler.hpp"
#include "analyses/spans/span_index.hpp"

namespace stepscope {

namespace {

std::optional<StepFunctions> step_functions(const Run& run, const StepsAnalysis& steps, ProfileOptions options) {
  if (steps.empty()) return std::nullopt;
  const ProcessSteps& p = steps.processes[steps.primary];
  if (p.steps.size() <= p.warmup_steps) return std::nullopt;
  StepFunctions out{p.pid, p.steps.size() - p.warmup_steps, p.steps[p.warmup_steps].start_ns, p.steps.back().end_ns, {}};
  options.from_ns = out.from_ns;
  options.to_ns = out.to_ns;
  out.costs = function_costs(build_profile(run, options));
  if (out.costs.functions.empty()) return std::nullopt;
  return out;
}

// "rank 3", or the trace's file when it names no rank.
std::string rank_label(const GpuRank& rank) {
  return rank.rank ? "rank " + std::to_string(*rank.rank) : std::filesystem::path(rank.source).filename().string();
}

// The run's ranks (its processes with steps), its primary's findings its own.
std::vector<JobRank> ranks_of(const Run& run, const StepsAnalysis& steps, const Diagnosis& diagnosis,
                              const std::string& source) {
  std::vector<JobRank> ranks = job_ranks_of(run, steps, source);
  for (JobRank& rank : ranks) {
    if (rank.primary) rank.own = diagnosis;
  }
  return ranks;
}

// The rank the others wait for is named with its own findings first
// (rank_straggler.hpp). Only it is diagnosed on its own, once the job's
// ranks are all in: the first of them, when it is not its run's primary.
JobRank* undiagnosed_waited_for(JobRanks& job) {
  if (job.waited_for.empty()) return nullptr;
  JobRank& rank = job.ranks[job.waited_for.front()];
  return rank.own ? nullptr : &rank;
}

// `input`'s rules run again as if process `pid` were its run's primary;
// none when the run has no such process with steps.
std::optional<Diagnosis> diagnose_as_primary(const DiagnosisInput& input, int64_t pid) {
  const std::vector<ProcessSteps>& processes = input.steps.processes;
  auto found = std::find_if(processes.begin(), processes.end(), [&](const ProcessSteps& p) { return p.pid == pid; });
  if (found == processes.end()) return std::nullopt;
  StepsAnalysis alone = with_primary(input.steps, static_cast<size_t>(found - processes.begin()));
  return diagnose({input.run, alone, input.processes, input.gpu, input.host_spans, input.launches, input.threads});
}

// What the diagnosis of a run reads beside the Run, built side by side.
struct DiagnosisSources {
  std::optional<HostSpansByThread> host_spans;
  std::optional<DeviceLaunches> launches;
  GpuRank gpu;
  StepsAnalysis steps;
  std::vector<ProcessSummary> processes;

  DiagnosisInput input(const Run& run, size_t threads) const {
    return {run, steps, processes, &gpu, &*host_spans, &*launches, threads};
  }
};

void gather_sources(const Run& run, const std::string& source, size_t threads, DiagnosisSources& out) {
  SideBySide work;
  auto host_spans_built = work.add([&] { out.host_spans.emplace(run); });
  auto launches_built = work.add([&] { out.launches.emplace(run); });
  work.add([&] {
    work.wait_for(launches_built);
    out.gpu = analyze_gpu_rank(run, source, *out.launches);
  });
  work.add([&] {
    work.wait_for(host_spans_built);
    work.wait_for(launches_built);
    out.steps = analyze_steps(run, {}, out.launches->profiler_steps(), out.host_spans->census());
    out.processes = summarize_processes(run, out.host_spans->census());
  });
  work.run(threads);
}

}  // namespace

// Which analysis reads what (each a pure function of the const Run):
//   host spans ── ops (with launches), profile → function costs, diagnosis
//   launches ──── ops, device analyses, steps (the ProfilerStep ranges)
//   census ────── steps, process summary, diagnosis (made with the host spans)
//   steps, processes, device analyses ── diagnosis
// The indexes first (the others wait for them), then the analyses: the
// device analyses first, which need only the launches (built in less than
// half the host spans' time), so the thread that built the launches does
// them while the host spans are being built instead of waiting; then the
// longest (ops), then the steps and the diagnosis, which waits for its
// inputs and runs its rules on the threads free by then; the profile last,
// which nothing waits for: it fills the time of the thread that would
// otherwise wait for the diagnosis' longest rule. On two threads the
// critical path is then the host spans and ops.
Report build_report(const Run& run, const std::string& source, const ProfileOptions& options,
                    const OpsOptions& ops_options, size_t threads) {
  Report report;
  report.run = &run;
  report.source = source;
  report.includes_idle = options.include_idle;
  report.gpu.ranks.emplace_back();
  std::optional<HostSpansByThread> host_spans;
  std::optional<DeviceLaunches> launches;
  SideBySide work;
  auto host_spans_built = work.add([&] { host_spans.emplace(run); });
  auto launches_built = work.add([&] { launches.emplace(run); });
  auto gpu_done = work.add([&] {
    work.wait_for(launches_built);
    report.gpu.ranks.front() = analyze_gpu_rank(run, source, *launches);
  });
  work.add([&] {
    work.wait_for(host_spans_built);
    work.wait_for(launches_built);
    report.ops = analyze_ops(run, *host_spans, *launches, ops_options);
  });
  auto steps_done = work.add([&] {
    // Their passes found the ProfilerStep ranges and counted the spans.
    work.wait_for(host_spans_built);
    work.wait_for(launches_built);
    report.steps = analyze_steps(run, {}, launches->profiler_steps(), host_spans->census());
    report.processes = summarize_processes(run, host_spans->census());
  });
  work.add([&] {
    work.wait_for(host_spans_built);
    work.wait_for(launches_built);
    work.wait_for(steps_done);
    work.wait_for(gpu_done);
    report.diagnosis =
        diagnose({run, report.steps, report.processes, &report.gpu.ranks.front(), &*host_spans, &*launches, threads});
  });
  // The only analysis that fails on its input (samples without a period):
  // those before it cannot, so its error stays the one a broken run gives.
  work.add([&] {
    work.wait_for(host_spans_built);
    Profile profile = build_profile(run, options, run.samples.empty() ? &*host_spans : nullptr);
    report.profile_source = profile.source;
    report.functions = function_costs(profile);
    if (run.samples.empty()) return;  // a trace's span profile: no second one on the large inputs
    work.wait_for(steps_done);
    report.step_functions = step_functions(run, report.steps, options);
  });
  work.run(threads);
  report.rank_diagnoses.push_back({rank_label(report.gpu.ranks.front()), report.diagnosis});
  add_job_ranks(report.job, ranks_of(run, report.steps, report.diagnosis, source));
  if (JobRank* waited_for = undiagnosed_waited_for(report.job)) {
    waited_for->own = diagnose_as_primary(
        {run, report.steps, report.processes, &report.gpu.ranks.front(), &*host_spans, &*launches, threads},
        waited_for->steps.pid);
  }
  diagnose_stragglers(report.diagnosis, report.job);
  return report;
}

RankAnalyses analyze_rank(const Run& run, const std::string& source, size_t threads) {
  DiagnosisSources sources;
  gather_sources(run, source, threads, sources);
  RankAnalyses out;
  Diagnosis diagnosis = diagnose(sources.input(run, threads));
  out.ranks = ranks_of(run, sources.steps, diagnosis, source);
  out.diagnosis = {rank_label(sources.gpu), std::move(diagnosis)};
  out.gpu = std::move(sources.gpu);
  return out;
}

namespace {

// A rank's analyses in the report, not yet compared with the others.
void append_rank(Report& report, RankAnalyses rank) {
  report.gpu.ranks.push_back(std::move(rank.gpu));
  report.rank_diagnoses.push_back(std::move(rank.diagnosis));
  add_job_ranks(report.job, std::move(rank.ranks));
}

// The ranks compared and their findings merged, from all those in the report.
void compare_and_merge(Report& report) {
  report.rank_comparison = compare_ranks(report.gpu.ranks);
  report.diagnosis = merge_rank_diagnoses(report.rank_diagnoses);
  diagnose_stragglers(report.diagnosis, report.job);
}

}  // namespace

void add_rank(Report& report, RankAnalyses rank) {
  append_rank(report, std::move(rank));
  compare_and_merge(report);
}

void add_rank(Report& report, const Run& run, const std::string& source) {
  add_rank(report, analyze_rank(run, source));
}

size_t ranks_that_fit(uint64_t headroom, uint64_t first, const std::vector<uint64_t>& others, size_t most) {
  most = std::max<size_t>(most, 1);
  uint64_t largest = others.empty() ? 0 : *std::max_element(others.begin(), others.end());
  if (largest == 0) return most;
  uint64_t beside_first = headroom - std::min(headroom, first);
  return std::clamp<uint64_t>(beside_first / largest, 1, most);
}

std::vector<RankAnalyses> analyze_ranks(const std::vector<std::string>& sources, const OpenRank& open_rank,
                                        size_t threads, size_t at_once, const std::atomic<bool>* stop) {
  std::vector<std::optional<RankAnalyses>> ranks(sources.size());
  size_t side_by_side = std::clamp<size_t>(
      sources.size(), 1, std::clamp<size_t>(std::min(threads, at_once), 1, kMostRanksAtOnce));
  size_t threads_each = std::max<size_t>(1, threads / side_by_side);
  SideBySide work;
  for (size_t i = 0; i < sources.size(); ++i) {
    work.add([&, i] {
      if (stop && stop->load(std::memory_order_relaxed)) return;
      Run run = open_rank(sources[i]);  // freed once its analyses are done
      ranks[i] = analyze_rank(run, sources[i], threads_each);
    });
  }
  work.run(side_by_side);
  std::vector<RankAnalyses> out;
  if (stop && stop->load(std::memory_order_relaxed)) return out;
  out.reserve(ranks.size());
  for (std::optional<RankAnalyses>& rank : ranks) out.push_back(std::move(*rank));
  return out;
}

void add_ranks(Report& report, std::vector<RankAnalyses> ranks, const OpenRank& open_rank, size_t threads) {
  if (ranks.empty()) return;
  for (RankAnalyses& rank : ranks) append_rank(report, std::move(rank));
  compare_and_merge(report);
  // The rank the others wait for, when it is not its run's primary: its run read again.
  if (JobRank* waited_for = undiagnosed_waited_for(report.job)) {
    Run run = open_rank(waited_for->source);
    DiagnosisSources again;
    gather_sources(run, waited_for->source, threads, again);
    waited_for->own = diagnose_as_primary(again.input(run, threads), waited_for->steps.pid);
    report.diagnosis = merge_rank_diagnoses(report.rank_diagnoses);
    diagnose_stragglers(report.diagnosis, report.job);
  }
}

BackgroundRanks::BackgroundRanks(std::vector<std::string> sources, OpenRank open_rank, size_t at_once,
                                 size_t threads)
    : sources_(std::move(sources)), open_rank_(std::move(open_rank)) {
  if (sources_.empty()) return;
  analyses_ = std::async(std::launch::async, [this, threads, at_once] {
    return analyze_ranks(sources_, open_rank_, threads, at_once, &stop_);
  });
}

BackgroundRanks::~BackgroundRanks() {
  stop_ = true;
  if (analyses_.valid()) analyses_.wait();
}

std::vector<RankAnalyses> BackgroundRanks::take() {
  return analyses_.valid() ? analyses_.get() : std::vector<RankAnalyses>{};
}

void add_ranks(Report& report, const std::vector<std::string>& sources, const OpenRank& open_rank, size_t threads) {
  add_ranks(report, analyze_ranks(sources, open_rank, threads), open_rank, threads);
}

}  // namespace stepscope
