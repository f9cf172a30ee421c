#include "analyses/report.hpp"

#include "analyses/span_index.hpp"

namespace stepscope {

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
  return report;
}

void add_rank(Report& report, const Run& run, const std::string& source) {
  report.gpu.ranks.push_back(analyze_gpu_rank(run, source));
  report.rank_comparison = compare_ranks(report.gpu.ranks);
}

}  // namespace stepscope
