#include "renderers/report/steps_json.hpp"

#include <numeric>

#include "renderers/json_writer.hpp"
#include "renderers/report/steps_text.hpp"

namespace stepscope {

namespace {

std::optional<int64_t> known(int64_t value) {
  return value >= 0 ? std::optional<int64_t>(value) : std::nullopt;
}

void append_step(std::string& out, const StepRecord& s) {
  JsonObject o(out);
  o.number("start_ns", s.start_ns).number("time_ns", s.time_ns());
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    o.number(std::string(step_phase_name(static_cast<StepPhase>(i))) + "_ns", s.phase_ns[i]);
  }
  o.number_or_null("samples", known(s.samples));
  o.number_or_null("tokens", known(s.tokens));
  o.number_or_null("peak_host_bytes", known(s.host_peak_bytes));
  o.number_or_null("peak_device_bytes", known(s.device_peak_bytes));
  o.boolean("warmup", s.warmup);
}

void append_phases(JsonObject& o, const ProcessSteps& p, std::string& out) {
  o.field("phases");
  JsonObject phases(out);
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    phases.number(step_phase_name(static_cast<StepPhase>(i)), p.phase_fractions[i]);
  }
}

void append_step_time(JsonObject& o, const ProcessSteps& p, std::string& out) {
  o.field("step_time_ms");
  {
    JsonObject t(out);
    t.number("p50", p.step_time.p50_ms).number("p90", p.step_time.p90_ms);
    t.number("p99", p.step_time.p99_ms).number("mean", p.step_time.mean_ms);
  }
  o.field("histogram");
  append_json_array(out, p.histogram, [](std::string& s, const HistogramBin& b) {
    JsonObject bin(s);
    bin.number("low_ms", b.low_ms).number("high_ms", b.high_ms).number("count", b.count);
  });
}

// The figures of one process; `full` adds per-step rows.
void append_process_fields(JsonObject& o, const ProcessSteps& p, std::string& out, bool full) {
  o.number("pid", p.pid);
  o.number_or_null("rank", p.rank);
  o.number("count", p.steps.size()).number("warmup_steps", p.warmup_steps);
  o.number_or_null("samples_per_sec", p.samples_per_sec);
  o.number_or_null("tokens_per_sec", p.tokens_per_sec);
  o.number("data_wait_fraction", p.phase_fractions[static_cast<size_t>(StepPhase::kDataWait)]);
  append_phases(o, p, out);
  append_step_time(o, p, out);
  o.number_or_null("peak_host_memory_bytes", p.peak_host_bytes);
  o.boolean("host_peak_per_step", p.host_peak_per_step);
  o.number_or_null("peak_device_memory_bytes", p.peak_device_bytes);
  if (!full) return;
  o.field("per_step");
  append_json_array(out, p.steps, append_step);
}

void append_functions(const Run& run, std::string& out, const std::vector<FunctionSamples>& functions) {
  append_json_array(out, functions, [&](std::string& s, const FunctionSamples& f) {
    JsonObject o(s);
    o.text("name", run.strings.get(f.function)).text("file", run.strings.get(f.file));
    o.number("samples", f.samples);
  });
}

void append_attribution(const Run& run, const StepSampleAttribution& a, std::string& out) {
  JsonObject o(out);
  o.field("by_phase");
  {
    JsonObject phases(out);
    for (size_t i = 0; i < kStepPhaseCount; ++i) phases.number(step_phase_name(static_cast<StepPhase>(i)), a.by_phase[i]);
  }
  o.number("outside_steps", a.outside_steps);
  o.number("data_wait_samples", a.data_wait_samples);
  o.field("data_wait_functions");
  append_functions(run, out, a.data_wait_functions);
  o.number("worker_samples", a.worker_samples);
  o.field("worker_functions");
  append_functions(run, out, a.worker_functions);
}

void append_job_rank(std::string& out, const JobRanks& job, size_t i) {
  const JobRank& rank = job.ranks[i];
  JsonObject r(out);
  append_process_fields(r, rank.steps, out, false);
  r.text("source", rank.source);
  r.text_or_null("host", rank.host);
  r.number_or_null("node_rank", rank.node_rank);
  r.number_or_null("local_rank", rank.local_rank);
  r.number_or_null("collective_wait_fraction", rank.steps.collective_wait_fraction);
  r.text("top_phase", step_phase_name(top_phase(rank.steps)));
  r.boolean("waited_for", job.is_waited_for(i)).boolean("slow", job.is_slow(i));
}

// Every rank of the job, the slowest and the stragglers by step time (as
// pids), and the ranks the others wait for (as rank numbers).
void append_job_ranks(const JobRanks& job, JsonObject& o, std::string& out) {
  std::vector<size_t> indexes(job.ranks.size());
  std::iota(indexes.begin(), indexes.end(), 0);
  o.field("ranks");
  append_json_array(out, indexes, [&](std::string& s, size_t i) { append_job_rank(s, job, i); });
  std::optional<int64_t> slowest_pid;
  if (job.slowest) slowest_pid = job.ranks[*job.slowest].steps.pid;
  o.number_or_null("slowest_pid", slowest_pid);
  o.field("straggler_pids");
  append_json_array(out, job.slow, [&](std::string& s, size_t i) { s += std::to_string(job.ranks[i].steps.pid); });
  std::vector<int64_t> waited_for;
  for (size_t i : job.waited_for) {
    if (job.ranks[i].steps.rank) waited_for.push_back(*job.ranks[i].steps.rank);
  }
  o.field("straggler_ranks");
  append_json_array(out, waited_for, [](std::string& s, int64_t rank) { s += std::to_string(rank); });
  o.number_or_null("others_wait_fraction", job.others_wait_fraction);
}

}  // namespace

void append_steps_json(const Run& run, const StepsAnalysis& steps, const JobRanks& job, std::string& out) {
  JsonObject o(out);
  o.text("origin", steps_origin_name(steps.origin));
  if (steps.empty()) {
    o.number("count", 0).text("reason", no_steps_reason(run));
    return;
  }
  const ProcessSteps& primary = steps.processes[steps.primary];
  if (steps.origin == StepsOrigin::kProfilerSteps) {
    o.text("origin_note", trace_origin_note(primary));
    o.number("profiler_ranges", primary.profiler_ranges).boolean("last_range_left_out", primary.last_range_left_out);
    o.text("loader_iterator", primary.loader_iterator);
  }
  append_process_fields(o, primary, out, true);
  o.field("samples");
  append_attribution(run, steps.attribution(), out);
  append_job_ranks(job, o, out);
}

}  // namespace stepscope
