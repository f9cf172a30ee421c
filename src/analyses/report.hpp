// What `stepscope report` shows, gathered from the analyses. Renderers
// (report_text, report_json) draw it; later analyses (steps, ops, gpu,
// diagnosis) add their results here.
#pragma once

#include <vector>

#include "analyses/diagnosis.hpp"
#include "analyses/function_costs.hpp"
#include "analyses/gpu.hpp"
#include "analyses/ops.hpp"
#include "analyses/process_summary.hpp"
#include "analyses/profile.hpp"
#include "analyses/rank_comparison.hpp"
#include "analyses/steps.hpp"

namespace stepscope {

struct Report {
  const Run* run = nullptr;
  std::string source;  // the file the run came from
  ProfileSource profile_source = ProfileSource::kEmpty;
  bool includes_idle = false;
  std::vector<ProcessSummary> processes;
  FunctionCosts functions;
  StepsAnalysis steps;
  OpsAnalysis ops;
  GpuAnalysis gpu;  // one rank per trace; the first is `run`
  std::optional<RankComparison> rank_comparison;  // with several ranks
  Diagnosis diagnosis;  // findings, best first; with several ranks, merged over them
  std::vector<RankDiagnosis> rank_diagnoses;  // each rank's own, in input order
};

Report build_report(const Run& run, const std::string& source, const ProfileOptions& options,
                    const OpsOptions& ops_options = {});

// Adds the device analyses and the diagnosis of another rank of the same job
// (its Run may be freed afterwards), compares the ranks, and merges the
// ranks' findings into the report's diagnosis.
void add_rank(Report& report, const Run& run, const std::string& source);

}  // namespace stepscope
