#include "renderers/report/json.hpp"

#include <fmt/format.h>

#include "renderers/json_writer.hpp"
#include "renderers/report/diagnosis_json.hpp"
#include "renderers/report/gpu_json.hpp"
#include "renderers/report/ops_json.hpp"
#include "renderers/report/steps_json.hpp"
#include "run/trimmed_run.hpp"

namespace stepscope {

namespace {

const char* basis_name(ProfileSource source) {
  switch (source) {
    case ProfileSource::kSamples:
      return "samples";
    case ProfileSource::kSpans:
      return "spans";
    case ProfileSource::kEmpty:
      break;
  }
  return "empty";
}

void append_processes(const Report& report, std::string& out) {
  append_json_array(out, report.processes, [&](std::string& s, const ProcessSummary& p) {
    JsonObject o(s);
    o.number("pid", p.pid).number("parent_pid", p.parent_pid).text("role", process_role_name(p.role));
    o.text("command", report.run->strings.get(p.command)).text("python_version", p.python_version);
    o.number("start_ns", p.start_ns).number("end_ns", p.end_ns);
    o.literal("exit_status", p.exit_status >= 0 ? std::to_string(p.exit_status) : "null");
    o.number("threads", p.threads).number("spans", p.spans).number("samples", p.samples);
    o.number("running_samples", p.running).number("idle_samples", p.idle);
    o.number("disk_wait_samples", p.disk_wait);
  });
}

void append_functions(const Report& report, const FunctionCosts& costs, std::string& out) {
  const StringTable& strings = report.run->strings;
  append_json_array(out, costs.functions, [&](std::string& s, const FunctionCost& f) {
    JsonObject o(s);
    o.text("name", strings.get(f.function)).text("file", strings.get(f.file));
    o.text("kind", frame_kind_name(f.kind)).number("self_ns", f.self_ns).number("total_ns", f.total_ns);
  });
}

// Only in a trimmed run's report: a report of an untrimmed run stays as it was.
void append_trimming(const Trimming& trimming, std::string& out) {
  JsonObject o(out);
  o.number("max_size_bytes", trimming.max_size_bytes).number("before_ns", trimming.before_ns);
  o.number_or_null("dropped_seconds", trimming.seconds_dropped);
  o.number("samples", trimming.samples).number("spans", trimming.spans).number("flows", trimming.flows);
  o.number("counter_values", trimming.counter_values);
}

void append_report(const Report& report, std::string& out) {
  JsonObject root(out);
  root.text("schema", "stepscope.report/1").text("source", report.source);
  root.field("metadata");
  {
    JsonObject metadata(out);
    for (const auto& [key, value] : report.run->metadata) metadata.text(key, value);
  }
  if (std::optional<Trimming> trimming = run_trimming(*report.run)) {
    root.field("trimmed");
    append_trimming(*trimming, out);
  }
  root.field("processes");
  append_processes(report, out);
  root.field("steps");
  append_steps_json(*report.run, report.steps, report.job, out);
  root.field("ops");
  append_ops_json(*report.run, report.ops, out);
  root.field("gpu");
  append_gpu_json(report.gpu, report.rank_comparison, out);
  root.field("diagnosis");
  append_diagnosis_json(report.diagnosis, out);
  root.text_or_null("diagnosis_note", report.diagnosis.note);
  root.field("profile");
  JsonObject profile(out);
  profile.text("basis", basis_name(report.profile_source));
  profile.boolean("includes_idle", report.includes_idle);
  profile.number("total_ns", report.functions.profile_ns);
  profile.field("functions");
  append_functions(report, report.functions, out);
  profile.field("in_steps");
  if (!report.step_functions) {
    out += "null";
    return;
  }
  const StepFunctions& in_steps = *report.step_functions;
  JsonObject steps(out);
  steps.number("pid", in_steps.pid).number("steps", in_steps.steps);
  steps.number("from_ns", in_steps.from_ns).number("to_ns", in_steps.to_ns);
  steps.number("total_ns", in_steps.costs.profile_ns);
  steps.field("functions");
  append_functions(report, in_steps.costs, out);
}

}  // namespace

void write_report_json(const Report& report, std::ostream& out) {
  std::string text;
  append_report(report, text);
  out << text << '\n';
}

}  // namespace stepscope
