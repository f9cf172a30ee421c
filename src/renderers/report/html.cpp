#include "renderers/report/html.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <simdjson.h>

#include <fmt/format.h>

#include "renderers/json_writer.hpp"
#include "renderers/report/json.hpp"
#include "renderers/report/web_assets.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

// The earliest time the run holds, the zero of every chart's time axis.
int64_t run_origin_ns(const Run& run) {
  int64_t origin = INT64_MAX;
  for (const Sample& s : run.samples) origin = std::min(origin, s.ts_ns);
  for (const Span& s : run.spans) origin = std::min(origin, s.start_ns);
  for (const CounterValue& v : run.counter_values) origin = std::min(origin, v.ts_ns);
  return origin == INT64_MAX ? 0 : origin;
}

// Frame and thread labels, each written once and referred to by index.
class NameIndex {
 public:
  size_t index(const std::string& name) {
    auto [found, inserted] = indexes_.try_emplace(name, names_.size());
    if (inserted) names_.push_back(name);
    return found->second;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::map<std::string, size_t> indexes_;
  std::vector<std::string> names_;
};

// A node is [parent, name, ns by phase...], or [parent, name, ns] without phases.
// The names of native frames go to `native_names`, which the page colours apart.
void append_flame_nodes(const FlameProcess& process, const HtmlReportInputs& in,
                        const std::vector<std::string>& frame_names, NameIndex& names,
                        std::set<size_t>& native_names, std::string& out) {
  const Run& run = *in.report.run;
  append_json_array(out, process.nodes, [&](std::string& s, const FlameNode& node) {
    size_t index = &node - process.nodes.data();
    size_t name = index == 0              ? names.index(process_label(run, process.pid))
                  : node.parent == 0      ? names.index(thread_label(run, process.pid, node.tid))
                                          : names.index(frame_names.at(node.frame));
    if (index > 0 && node.parent != 0 && in.profile.frames().get(node.frame).kind == FrameKind::kNative) {
      native_names.insert(name);
    }
    s += fmt::format("[{},{}", index == 0 ? -1 : static_cast<int64_t>(node.parent), name);
    if (in.flame.has_phases) {
      for (int64_t ns : node.total_ns) s += fmt::format(",{}", ns);
    } else {
      int64_t total = 0;
      for (int64_t ns : node.total_ns) total += ns;
      s += fmt::format(",{}", total);
    }
    s += ']';
  });
}

void append_flame(const HtmlReportInputs& in, std::string& out) {
  const Run& run = *in.report.run;
  std::vector<std::string> frame_names = frame_labels(run.strings, in.profile.frames());
  NameIndex names;
  std::set<size_t> native_names;
  std::string processes;
  append_json_array(processes, in.flame.processes, [&](std::string& s, const FlameProcess& p) {
    JsonObject o(s);
    o.number("pid", p.pid).number("total_ns", p.total_ns());
    o.field("nodes");
    append_flame_nodes(p, in, frame_names, names, native_names, s);
  });
  JsonObject flame(out);
  flame.field("phases");
  if (in.flame.has_phases) {
    std::vector<const char*> phase_names;
    for (size_t p = 0; p < kFlamePhaseCount; ++p) phase_names.push_back(flame_phase_name(static_cast<FlamePhase>(p)));
    append_json_array(out, phase_names, [](std::string& s, const char* name) { append_json_string(s, name); });
  } else {
    out += "null";
  }
  flame.field("names");
  append_json_array(out, names.names(), [](std::string& s, const std::string& name) { append_json_string(s, name); });
  flame.field("native");
  append_json_array(out, native_names, [](std::string& s, size_t name) { s += std::to_string(name); });
  flame.literal("processes", processes);
}

void append_counters(const HtmlReportInputs& in, int64_t origin_ns, std::string& out) {
  const Run& run = *in.report.run;
  append_json_array(out, in.counters, [&](std::string& s, const CounterSeries& series) {
    const CounterTrack& track = run.counter_tracks.at(series.track);
    JsonObject o(s);
    o.text("name", run.strings.get(track.name)).number("pid", track.pid).text("unit", run.strings.get(track.unit));
    o.number("raw_points", series.raw_points);
    o.field("t_us");  // microseconds since origin_ns
    append_json_array(s, series.ts_ns, [&](std::string& t, int64_t ts) { t += fmt::format("{}", (ts - origin_ns) / 1000); });
    o.field("values");
    append_json_array(s, series.values, [](std::string& t, double v) {
      t += std::isfinite(v) ? fmt::format("{:.6g}", v) : "null";  // JSON has no NaN
    });
  });
}

// The report JSON less steps.per_step: a long run has tens of thousands of
// steps, megabytes the page does not need (it draws step_series instead).
std::string report_json_for_page(const Report& report) {
  std::ostringstream text;
  write_report_json(report, text);
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(text.str()).get(root)) throw std::logic_error("report_json wrote invalid JSON");
  std::string out;
  JsonObject page(out);
  for (auto [key, value] : root) {
    simdjson::dom::object steps;
    if (key != "steps" || value.get(steps)) {
      page.literal(key, simdjson::minify(value));
      continue;
    }
    page.field(key);
    JsonObject kept(out);
    for (auto [step_key, step_value] : steps) {
      if (step_key != "per_step") kept.literal(step_key, simdjson::minify(step_value));
    }
  }
  return out;
}

// The primary process's steps as columns, consecutive steps averaged in
// groups when there are more than kMaxStepPoints (a chart shows no more).
constexpr size_t kMaxStepPoints = 2000;

struct StepBucket {
  size_t first = 0;  // index of its first step
  int64_t start_ns = 0;
  double time_ns = 0;
  std::array<double, kStepPhaseCount> phase_ns{};
  std::optional<double> samples_per_s, tokens_per_s;
  bool warmup = false;
};

std::optional<double> rate(const std::vector<StepRecord>& steps, size_t from, size_t to, int64_t StepRecord::*field) {
  int64_t amount = 0, ns = 0;
  for (size_t i = from; i < to; ++i) {
    if (steps[i].*field < 0) return std::nullopt;
    amount += steps[i].*field;
    ns += steps[i].time_ns();
  }
  if (ns <= 0) return std::nullopt;
  return static_cast<double>(amount) / (static_cast<double>(ns) / 1e9);
}

std::vector<StepBucket> step_buckets(const std::vector<StepRecord>& steps, size_t per_bucket) {
  std::vector<StepBucket> buckets;
  for (size_t from = 0; from < steps.size(); from += per_bucket) {
    size_t to = std::min(steps.size(), from + per_bucket);
    StepBucket b{.first = from, .start_ns = steps[from].start_ns, .time_ns = 0, .phase_ns = {},
                 .samples_per_s = rate(steps, from, to, &StepRecord::samples),
                 .tokens_per_s = rate(steps, from, to, &StepRecord::tokens), .warmup = false};
    for (size_t i = from; i < to; ++i) {
      b.time_ns += static_cast<double>(steps[i].time_ns());
      for (size_t p = 0; p < kStepPhaseCount; ++p) b.phase_ns[p] += static_cast<double>(steps[i].phase_ns[p]);
      b.warmup = b.warmup || steps[i].warmup;
    }
    double n = static_cast<double>(to - from);
    b.time_ns /= n;
    for (double& ns : b.phase_ns) ns /= n;
    buckets.push_back(b);
  }
  return buckets;
}

template <typename Value>
void column(JsonObject& o, std::string& out, std::string_view key, const std::vector<StepBucket>& buckets, Value value) {
  o.field(key);
  append_json_array(out, buckets, [&](std::string& s, const StepBucket& b) {
    std::optional<double> v = value(b);
    s += v && std::isfinite(*v) ? fmt::format("{:.6g}", *v) : "null";
  });
}

void append_step_series(const StepsAnalysis& steps, int64_t origin_ns, std::string& out) {
  if (steps.empty()) {
    out += "null";
    return;
  }
  const ProcessSteps& primary = steps.processes[steps.primary];
  size_t per_bucket = std::max<size_t>(1, (primary.steps.size() + kMaxStepPoints - 1) / kMaxStepPoints);
  std::vector<StepBucket> buckets = step_buckets(primary.steps, per_bucket);
  JsonObject o(out);
  o.number("pid", primary.pid).number("steps_per_point", per_bucket);
  column(o, out, "first_step", buckets, [](const StepBucket& b) { return std::optional<double>(static_cast<double>(b.first + 1)); });
  column(o, out, "start_us", buckets, [&](const StepBucket& b) {
    return std::optional<double>(static_cast<double>((b.start_ns - origin_ns) / 1000));
  });
  column(o, out, "time_ns", buckets, [](const StepBucket& b) { return std::optional<double>(b.time_ns); });
  for (size_t p = 0; p < kStepPhaseCount; ++p) {
    column(o, out, fmt::format("{}_ns", step_phase_name(static_cast<StepPhase>(p))), buckets,
           [p](const StepBucket& b) { return std::optional<double>(b.phase_ns[p]); });
  }
  column(o, out, "samples_per_s", buckets, [](const StepBucket& b) { return b.samples_per_s; });
  column(o, out, "tokens_per_s", buckets, [](const StepBucket& b) { return b.tokens_per_s; });
  column(o, out, "warmup", buckets, [](const StepBucket& b) { return std::optional<double>(b.warmup ? 1 : 0); });
}

// The template with each `@NAME@` placeholder replaced once.
void fill_template(std::string_view page, const std::map<std::string_view, std::string>& values, std::string& out) {
  while (!page.empty()) {
    size_t at = page.find('@');
    size_t end = at == std::string_view::npos ? at : page.find('@', at + 1);
    if (end == std::string_view::npos) {
      out += page;
      return;
    }
    auto found = values.find(page.substr(at + 1, end - at - 1));
    if (found == values.end()) {  // a lone '@': keep it, look again after it
      out += page.substr(0, at + 1);
      page.remove_prefix(at + 1);
      continue;
    }
    out += page.substr(0, at);
    out += found->second;
    page.remove_prefix(end + 1);
  }
}

std::string inline_elements(std::span<const std::string_view> assets, std::string_view open, std::string_view close) {
  std::string out;
  for (std::string_view asset : assets) {
    out += open;
    out += asset;
    out += close;
    out += '\n';
  }
  return out;
}

}  // namespace

void append_script_safe_json(std::string& out, std::string_view json) {
  out.reserve(out.size() + json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
}

std::string report_html_data(const HtmlReportInputs& in) {
  const Run& run = *in.report.run;
  int64_t origin_ns = run_origin_ns(run);
  std::string json;
  {
    JsonObject root(json);
    root.text("format", "stepscope.html-data/1").number("origin_ns", origin_ns);
    root.literal("report", report_json_for_page(in.report));
    root.field("step_series");
    append_step_series(in.report.steps, origin_ns, json);
    root.field("flame");
    append_flame(in, json);
    root.field("counters");
    append_counters(in, origin_ns, json);
  }
  std::string safe;
  append_script_safe_json(safe, json);
  return safe;
}

void write_report_html(const HtmlReportInputs& in, std::ostream& out) {
  std::string title = "stepscope report: ";
  append_xml_text(title, in.report.source);
  std::string page;
  fill_template(web::report_template(),
                {{"TITLE", title},
                 {"STYLES", inline_elements(web::report_styles(), "<style>", "</style>")},
                 {"SCRIPTS", inline_elements(web::report_scripts(), "<script>", "</script>")},
                 {"DATA", report_html_data(in)}},
                page);
  out << page;
}

void write_report_html(const Report& report, const Profile& profile, bool include_idle, std::ostream& out) {
  FlameTree flame = build_flame_tree(*report.run, profile, {.include_idle = include_idle});
  std::vector<CounterSeries> counters = build_counter_series(*report.run);
  write_report_html({.report = report, .profile = profile, .flame = flame, .counters = counters}, out);
}

}  // namespace stepscope
