#include "analyses/diagnosis.hpp"

#include <algorithm>

#include "analyses/diagnosis_facts.hpp"
#include "analyses/diagnosis_rules.hpp"

namespace stepscope {

namespace {

using Rule = std::optional<Finding> (*)(const DiagnosisInput&, const DiagnosisFacts&);

// In the order ties are shown.
constexpr Rule kRules[] = {
    input_pipeline_rule, optimizer_heavy_rule, logging_overhead_rule, gc_pauses_rule, memory_pressure_rule,
};

}  // namespace

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kHigh:
      return "high";
    case Severity::kMedium:
      return "medium";
    case Severity::kLow:
      break;
  }
  return "low";
}

double amdahl_speedup(double share) { return 1.0 / (1.0 - std::clamp(share, 0.0, 0.99)); }

Severity severity_for_speedup(double speedup) {
  if (speedup >= 1.5) return Severity::kHigh;
  if (speedup >= 1.1) return Severity::kMedium;
  return Severity::kLow;
}

void rank_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.expected_speedup.has_value() != b.expected_speedup.has_value()) return a.expected_speedup.has_value();
    if (a.expected_speedup && *a.expected_speedup != *b.expected_speedup) return *a.expected_speedup > *b.expected_speedup;
    return a.severity > b.severity;
  });
}

Diagnosis diagnose(const DiagnosisInput& input) {
  Diagnosis out;
  DiagnosisFacts facts = gather_diagnosis_facts(input);
  for (Rule rule : kRules) {
    if (auto finding = rule(input, facts)) out.findings.push_back(std::move(*finding));
  }
  rank_findings(out.findings);
  if (!facts.primary) {
    out.not_diagnosed =
        "none: the run has no steps (not recorded by stepscope with its hooks), so the step-time rules "
        "could not look";
  }
  return out;
}

}  // namespace stepscope
