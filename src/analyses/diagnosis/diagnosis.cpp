#include "analyses/diagnosis/diagnosis.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "analyses/device/activity.hpp"
#include "analyses/diagnosis/facts.hpp"
#include "analyses/diagnosis/rules.hpp"
#include "analyses/side_by_side.hpp"
#include "analyses/spans/span_index.hpp"

namespace stepscope {

namespace {

using Rule = std::optional<Finding> (*)(const DiagnosisInput&, const DiagnosisFacts&);

// In the order ties are shown.
constexpr Rule kRules[] = {
    input_pipeline_rule, optimizer_heavy_rule, logging_overhead_rule, gc_pauses_rule, python_overhead_rule,
    sync_in_loop_rule, host_collectives_rule,
    gpu_utilization_rule, communication_not_overlapped_rule, pageable_memcpy_rule, small_memcpy_rule,
    memory_pressure_rule, step_overhead_rule,
};

// A step no rule finds overhead in spends its time where the phases say:
// most often in the model's forward and backward, which only a faster model,
// device or precision shortens.
std::string clean_step_note(const ProcessSteps& p) {
  double compute = p.phase_fractions[static_cast<size_t>(StepPhase::kForward)] +
                   p.phase_fractions[static_cast<size_t>(StepPhase::kBackward)];
  std::string shares = fmt::format("forward and backward take {}, the optimizer {}, data wait {}, other {}",
                                   percent_text(compute),
                                   percent_text(p.phase_fractions[static_cast<size_t>(StepPhase::kOptimizer)]),
                                   percent_text(p.phase_fractions[static_cast<size_t>(StepPhase::kDataWait)]),
                                   percent_text(p.phase_fractions[static_cast<size_t>(StepPhase::kOther)]));
  if (compute >= 0.5) {
    return "compute-bound: " + shares +
           " of step time; no rule found overhead to remove (a faster model, precision or device shortens it)";
  }
  return "no rule found a known bottleneck; " + shares + " of step time";
}

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

Finding time_finding(std::string id, double share, std::string title) {
  Finding out;
  out.id = std::move(id);
  out.title = std::move(title);
  out.share = share;
  out.expected_speedup = amdahl_speedup(share);
  out.severity = severity_for_speedup(*out.expected_speedup);
  return out;
}

void rank_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.expected_speedup.has_value() != b.expected_speedup.has_value()) return a.expected_speedup.has_value();
    if (a.expected_speedup && *a.expected_speedup != *b.expected_speedup) return *a.expected_speedup > *b.expected_speedup;
    return a.severity > b.severity;
  });
}

Diagnosis diagnose(const DiagnosisInput& given) {
  // The rules that walk host spans share one order: the caller's, or one sorted here.
  std::optional<HostSpansByThread> own;
  DiagnosisInput input = given;
  if (!input.host_spans) input.host_spans = &own.emplace(input.run);
  Diagnosis out;
  DiagnosisFacts facts = gather_diagnosis_facts(input);
  // Each rule is a pure function of the input and the facts. Added in their
  // order, so that of rules that fail, the first one's error is the error
  // (as one after another), and their findings kept in that order.
  std::array<std::optional<Finding>, std::size(kRules)> found;
  SideBySide work;
  for (size_t r = 0; r < std::size(kRules); ++r) work.add([&, r] { found[r] = kRules[r](input, facts); });
  // Two at most: on a trace, one rule (python_overhead, a walk over the step
  // thread's spans) takes most of the time and a second thread the others;
  // more would only start threads.
  work.run(std::min<size_t>(input.threads, 2));
  for (std::optional<Finding>& finding : found) {
    if (finding) out.findings.push_back(std::move(*finding));
  }
  rank_findings(out.findings);
  if (!facts.primary) {
    out.note =
        "none: the run has no steps (neither recorded by stepscope with its hooks nor a trace with "
        "ProfilerStep#N ranges), so the step-time rules could not look";
  } else if (out.findings.empty()) {
    out.note = clean_step_note(*facts.primary);
  }
  return out;
}

namespace {

// Whether `a` is a worse case of the same finding than `b`.
bool worse(const Finding& a, const Finding& b) {
  if (a.expected_speedup && b.expected_speedup) return *a.expected_speedup > *b.expected_speedup;
  return a.severity > b.severity;
}

std::string ranks_text(const std::vector<std::string>& labels) {
  std::string text;
  for (const std::string& label : labels) text += (text.empty() ? "" : ", ") + label;
  return text;
}

}  // namespace

Diagnosis merge_rank_diagnoses(const std::vector<RankDiagnosis>& ranks) {
  Diagnosis out;
  if (ranks.empty()) return out;
  out.note = ranks.front().diagnosis.note;
  std::map<std::string, size_t> index_of_id;  // into out.findings
  std::vector<std::string> figures_of;        // by finding: the rank whose figures it keeps
  for (const RankDiagnosis& rank : ranks) {
    for (const Finding& finding : rank.diagnosis.findings) {
      auto [it, added] = index_of_id.emplace(finding.id, out.findings.size());
      if (added) {
        out.findings.push_back(finding);
        figures_of.push_back(rank.label);
      } else if (worse(finding, out.findings[it->second])) {
        std::vector<std::string> seen = std::move(out.findings[it->second].ranks);
        out.findings[it->second] = finding;
        out.findings[it->second].ranks = std::move(seen);
        figures_of[it->second] = rank.label;
      }
      out.findings[it->second].ranks.push_back(rank.label);
    }
  }
  // The first evidence line says where it was found and whose figures follow.
  for (size_t i = 0; i < out.findings.size(); ++i) {
    Finding& f = out.findings[i];
    std::string where = f.ranks.size() == 1
                            ? fmt::format("found on {} only, of {} ranks", figures_of[i], ranks.size())
                            : fmt::format("found on {} of {} ranks ({}); the figures below are of {}, where the "
                                          "bound is highest",
                                          f.ranks.size(), ranks.size(), ranks_text(f.ranks), figures_of[i]);
    f.evidence.insert(f.evidence.begin(), std::move(where));
  }
  rank_findings(out.findings);
  return out;
}

}  // namespace stepscope
