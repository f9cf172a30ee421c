#include "analyses/report.hpp"

#include <filesystem>

#include "analyses/span_index.hpp"

namespace stepscope {

namespace {

// "rank 3", or the trace's file when it names no rank.
std::string rank_label(const GpuRank& rank) {
  return rank.rank ? "rank " + std::to_string(*rank.rank) : std::filesystem::path(rank.source).filename().string();
}

}  // namespace

Report build_report(const Run& run, const std::string& source, const ProfileOptions& options,
                    const OpsOptions& ops_options) {
  Report report;
  report.run = &run;
  report.source = source;
  // Sorted once for the profile, the operators and the device analyses.
  SpanIndex index(run);
  Profile profile = build_profile(run, options, run.samples.empty() ? &index.host_spans : nullptr);
  report.profile_source = profile.source;
  report.includes_idle = options.include_idle;
  report.processes = summarize_processes(run);
  report.functions = function_costs(profile);
  report.steps = analyze_steps(run);
  report.ops = analyze_ops(run, index, ops_options);
  report.gpu.ranks.push_back(analyze_gpu_rank(run, source, index.launches));
  report.diagnosis = diagnose({run, report.steps, report.processes, &report.gpu.ranks.front()});
  report.rank_diagnoses.push_back({rank_label(report.gpu.ranks.front()), report.diagnosis});
  return report;
}

void add_rank(Report& report, const Run& run, const std::string& source) {
  const GpuRank& gpu = report.gpu.ranks.emplace_back(analyze_gpu_rank(run, source));
  report.rank_comparison = compare_ranks(report.gpu.ranks);
  StepsAnalysis steps = analyze_steps(run);
  std::vector<ProcessSummary> processes = summarize_processes(run);
  report.rank_diagnoses.push_back({rank_label(gpu), diagnose({run, steps, processes, &gpu})});
  report.diagnosis = merge_rank_diagnoses(report.rank_diagnoses);
}

}  // namespace stepscope
