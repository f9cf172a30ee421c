// Diagnosis: rules over the other analyses' results that name what limits a
// training step, with the evidence and the remedy (docs/diagnosis.md).
//
// Each rule looks at one mechanism (the input pipeline, logging, the
// optimizer, memory, ...) and yields at most one finding. Findings are
// ranked by their expected gain: the Amdahl bound 1 / (1 - share) of the
// measured share of step time the remedy can remove, so the finding that can
// help most comes first. Findings about risk rather than time (memory near
// capacity) carry no speedup and come after those that do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyses/device/gpu.hpp"
#include "analyses/function_costs.hpp"
#include "analyses/process_summary.hpp"
#include "analyses/steps/steps.hpp"
#include "run/run.hpp"

namespace stepscope {

class HostSpansByThread;  // analyses/spans/span_index.hpp

enum class Severity { kLow, kMedium, kHigh };
const char* severity_name(Severity severity);

struct Finding {
  std::string id;     // the rule's name, stable: input_bound, logging_overhead, ...
  Severity severity = Severity::kLow;
  std::string title;  // one line: what limits the step
  // Measured facts, one sentence each. They may quote names from the run
  // (functions, files): renderers escape them like any other run string.
  std::vector<std::string> evidence;
  std::string recommendation;  // what to change, most promising first
  // The measured share of step time the finding is about (0 for findings
  // about risk), and the bound on the speedup its remedy can bring.
  double share = 0;
  std::optional<double> expected_speedup;
  // For a finding about neither time nor risk, what it means in a few words
  // ("the job cannot go on"), shown where the bound would be.
  std::string impact;
  // In a report over several ranks: the ranks it was found on (empty for a
  // single run). The figures are of the rank where the bound is highest.
  std::vector<std::string> ranks;
};

// What the rules read: the analyses a report gathers. All refer to `run`.
struct DiagnosisInput {
  const Run& run;
  const StepsAnalysis& steps;
  const std::vector<ProcessSummary>& processes;
  // The device analyses of `run` (the report's first rank); null without them.
  const GpuRank* gpu = nullptr;
  // The host spans of `run` in nesting order, when the caller has them
  // already (report shares them); null: diagnose sorts them once for its rules.
  const HostSpansByThread* host_spans = nullptr;
  // The device activity of `run` joined to its launches, when the caller has
  // it (report shares it); null: the rules that need the activity find it
  // in a pass over the spans.
  const DeviceLaunches* launches = nullptr;
  // The threads the rules may run on side by side (the caller's included):
  // the report's last analysis, which the others' threads would otherwise
  // watch. The findings are the same on any number.
  size_t threads = 1;
};

struct Diagnosis {
  std::vector<Finding> findings;  // best first
  // Without findings, the verdict in words: why the rules could not look
  // (no steps), or where a step with nothing to remove spends its time.
  std::string note;
};

Diagnosis diagnose(const DiagnosisInput& input);

// One rank's diagnosis in a report over several ranks (label: "rank 3", or
// the trace's file when it names no rank).
struct RankDiagnosis {
  std::string label;
  Diagnosis diagnosis;
};

// The findings of every rank, each rule's findings merged into one that lists
// the ranks it was found on and keeps the figures of the rank with the
// highest bound; best first. The note is the first rank's.
Diagnosis merge_rank_diagnoses(const std::vector<RankDiagnosis>& ranks);

// The Amdahl bound on the speedup from removing `share` of the time:
// 1 / (1 - share), with share clamped below 1 so the bound stays finite.
double amdahl_speedup(double share);

// The severity of a time finding from its bound: high from 1.5x, medium
// from 1.1x, else low.
Severity severity_for_speedup(double speedup);

// A finding about time: `share` of the step (or of the device's span) that
// removing the cause would save, with its Amdahl bound and severity.
Finding time_finding(std::string id, double share, std::string title = {});

// Orders findings best first: by expected speedup, then those without one
// by severity; ties keep the rules' order.
void rank_findings(std::vector<Finding>& findings);

}  // namespace stepscope
