#include "renderers/metrics/prometheus.hpp"

#include <iterator>
#include <map>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analyses/ranks.hpp"
#include "renderers/escape.hpp"

namespace stepscope {

namespace {

constexpr double kSecondsPerNs = 1e-9;

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string label_text(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", key, prometheus_label_value(value));
  }
  return out.empty() ? out : out + "}";
}

Labels with(Labels labels, std::string key, std::string value) {
  labels.emplace_back(std::move(key), std::move(value));
  return labels;
}

class Exposition {
 public:
  // HELP and TYPE, once per metric, before its first series.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void series(std::string_view name, const Labels& labels, double value) {
    fmt::format_to(std::back_inserter(text_), "{}{} {}\n", name, label_text(labels), value);
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

// A process's labels: its rank and local rank as its hooks reported them, else its pid.
Labels process_labels(const Run& run, int64_t pid, const Labels& constant) {
  Labels labels = constant;
  auto rank = process_fact(run, pid, "rank");
  if (rank) {
    labels.emplace_back("rank", *rank);
    if (auto local = process_fact(run, pid, "local_rank")) labels.emplace_back("local_rank", *local);
  } else {
    labels.emplace_back("pid", std::to_string(pid));
  }
  return labels;
}

void write_steps(Exposition& out, const Run& run, const LiveSteps& steps, const Labels& constant,
                 const ExpositionContext& context) {
  if (steps.processes().empty()) return;
  std::vector<std::pair<Labels, const LiveProcessSteps*>> processes;
  for (const auto& [pid, p] : steps.processes()) processes.emplace_back(process_labels(run, pid, constant), &p);
  auto each = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    out.family(name, type, help);
    for (const auto& [labels, p] : processes) value(labels, *p);
  };
  each("stepscope_steps_total", "counter", "Training steps completed.",
       [&](const Labels& l, const LiveProcessSteps& p) { out.series("stepscope_steps_total", l, double(p.steps)); });
  each("stepscope_step_duration_seconds", "histogram", "Step time, from the end of one step to the end of the next.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         for (size_t i = 0; i < kStepSecondsBuckets.size(); ++i) {
           out.series("stepscope_step_duration_seconds_bucket", with(l, "le", fmt::format("{}", kStepSecondsBuckets[i])),
                      double(p.bucket_steps[i]));
         }
         out.series("stepscope_step_duration_seconds_bucket", with(l, "le", "+Inf"), double(p.steps));
         out.series("stepscope_step_duration_seconds_sum", l, p.step_seconds);
         out.series("stepscope_step_duration_seconds_count", l, double(p.steps));
       });
  each("stepscope_samples_total", "counter", "Samples of the steps whose batches were measured.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         if (p.samples) out.series("stepscope_samples_total", l, double(*p.samples));
       });
  each("stepscope_tokens_total", "counter", "Tokens of the steps whose batches were measured.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         if (p.tokens) out.series("stepscope_tokens_total", l, double(*p.tokens));
       });
  each("stepscope_data_wait_seconds_total", "counter", "Step time spent waiting for the DataLoader.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         out.series("stepscope_data_wait_seconds_total", l, p.phase_seconds[static_cast<size_t>(StepPhase::kDataWait)]);
       });
  each("stepscope_phase_seconds_total", "counter",
       "Step time by phase (data_wait, forward, backward, optimizer, other); the phases add up to the steps' time.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         for (size_t i = 0; i < kStepPhaseCount; ++i) {
           out.series("stepscope_phase_seconds_total", with(l, "phase", step_phase_name(static_cast<StepPhase>(i))),
                      p.phase_seconds[i]);
         }
       });
  each("stepscope_last_step_timestamp_seconds", "gauge", "When the last step ended, Unix time.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         out.series("stepscope_last_step_timestamp_seconds", l,
                    static_cast<double>(p.last_step_end_ns + context.unix_minus_run_clock_ns) * kSecondsPerNs);
       });
  each("stepscope_step_peak_memory_bytes", "gauge", "Peak memory of the last step that measured it.",
       [&](const Labels& l, const LiveProcessSteps& p) {
         if (p.last_host_peak_bytes) {
           out.series("stepscope_step_peak_memory_bytes", with(l, "kind", "host"), double(*p.last_host_peak_bytes));
         }
         if (p.last_device_peak_bytes) {
           out.series("stepscope_step_peak_memory_bytes", with(l, "kind", "device"), double(*p.last_device_peak_bytes));
         }
       });
}

// The monitor's latest readings: processes still running (a gone process's last
// reading would read as a live one), and each GPU labelled as NVIDIA's DCGM
// exporter labels it (`gpu`, `UUID`, `modelName`, `Hostname`), so that the two join.
void write_gauges(Exposition& out, const Run& run, const LiveGauges& gauges, const Labels& constant,
                  const ExpositionContext& context) {
  auto processes = [&](std::string_view name, std::string_view help, const std::map<int64_t, double>& values) {
    bool any = false;
    for (const auto& [pid, value] : values) {
      const Process* process = run.find_process(pid);
      if (process && process->end_ns != 0) continue;
      if (!any) out.family(name, "gauge", help);
      any = true;
      out.series(name, process_labels(run, pid, constant), value);
    }
  };
  processes("stepscope_process_resident_memory_bytes", "Resident memory of each process of the recorded tree.",
            gauges.process_rss_bytes);
  processes("stepscope_process_cpu_ratio", "CPU seconds per second of each process (1: one core busy).",
            gauges.process_cpu_ratio);
  auto gpus = [&](std::string_view name, std::string_view help, const std::map<int, double>& values) {
    if (values.empty()) return;
    out.family(name, "gauge", help);
    for (const auto& [gpu, value] : values) {
      Labels labels = with(constant, "gpu", std::to_string(gpu));
      for (auto [key, label] : {std::pair{"uuid", "UUID"}, std::pair{"name", "modelName"}}) {
        auto found = run.metadata.find(fmt::format("sysmon_gpu.{}.{}", gpu, key));
        if (found != run.metadata.end()) labels.emplace_back(label, found->second);
      }
      if (!context.host.empty()) labels.emplace_back("Hostname", context.host);
      out.series(name, labels, value);
    }
  };
  gpus("stepscope_gpu_utilization_ratio", "Share of time a kernel ran on the GPU (NVML).", gauges.gpu_utilization_ratio);
  gpus("stepscope_gpu_memory_used_bytes", "Device memory in use on the GPU (NVML).", gauges.gpu_memory_used_bytes);
}

void write_recorder(Exposition& out, const SamplerStats& stats, const Labels& constant, const ExpositionContext& context) {
  out.family("stepscope_recorder_samples_total", "counter", "Thread stacks the recorder took.");
  out.series("stepscope_recorder_samples_total", constant, double(stats.samples));
  out.family("stepscope_recorder_error_samples_total", "counter", "Stack reads that were torn or refused.");
  out.series("stepscope_recorder_error_samples_total", constant, double(stats.error_samples));
  out.family("stepscope_recorder_rounds_total", "counter", "Sampling rounds run.");
  out.series("stepscope_recorder_rounds_total", constant, double(stats.rounds));
  out.family("stepscope_recorder_rate_hertz", "gauge", "Sampling rounds per second reached since the start.");
  out.series("stepscope_recorder_rate_hertz", constant,
             context.recording_seconds > 0 ? double(stats.rounds) / context.recording_seconds : 0);
}

}  // namespace

std::string prometheus_label_value(std::string_view text) {
  std::string printable;
  append_printable_utf8(printable, text);  // control characters (newlines too) become \xNN
  std::string out;
  for (char c : printable) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

std::string prometheus_exposition(const Run& run, const LiveSteps& steps, const LiveGauges& gauges,
                                  const SamplerStats& stats, const ExpositionContext& context) {
  Labels constant;
  if (!context.host.empty()) constant.emplace_back("host", context.host);
  if (!context.job.empty()) constant.emplace_back("job", context.job);
  Exposition out;
  write_steps(out, run, steps, constant, context);
  write_gauges(out, run, gauges, constant, context);
  write_recorder(out, stats, constant, context);
  return out.take();
}

}  // namespace stepscope
