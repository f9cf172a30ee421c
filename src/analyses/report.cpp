#include "analyses/report.hpp"

namespace stepscope {

Report build_report(const Run& run, const std::string& source, const ProfileOptions& options) {
  Report report;
  report.run = &run;
  report.source = source;
  Profile profile = build_profile(run, options);
  report.profile_source = profile.source;
  report.includes_idle = options.include_idle;
  report.processes = summarize_processes(run);
  report.functions = function_costs(profile);
  report.steps = analyze_steps(run);
  report.diagnosis = diagnose({run, report.steps, report.processes});
  return report;
}

}  // namespace stepscope
