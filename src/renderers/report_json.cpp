#include "renderers/report_json.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

// A small writer for the flat objects of the report; every string goes
// through append_json_string, so names from programs are always escaped.
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_ += '{'; }
  ~JsonObject() { out_ += '}'; }
  JsonObject& field(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, key);
    out_ += ':';
    return *this;
  }
  JsonObject& text(std::string_view key, std::string_view value) {
    field(key);
    append_json_string(out_, value);
    return *this;
  }
  template <typename Number>
  JsonObject& number(std::string_view key, Number value) {
    field(key);
    out_ += fmt::format("{}", value);
    return *this;
  }

 private:
  std::string& out_;
  bool first_ = true;
};

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
  out += '[';
  for (size_t i = 0; i < report.processes.size(); ++i) {
    const ProcessSummary& p = report.processes[i];
    if (i) out += ',';
    JsonObject o(out);
    o.number("pid", p.pid).number("parent_pid", p.parent_pid);
    o.text("command", report.run->strings.get(p.command)).text("python_version", p.python_version);
    o.number("start_ns", p.start_ns).number("end_ns", p.end_ns);
    o.field("exit_status");
    out += p.exit_status >= 0 ? std::to_string(p.exit_status) : "null";
    o.number("threads", p.threads).number("samples", p.samples);
    o.number("running_samples", p.running).number("idle_samples", p.idle);
    o.number("disk_wait_samples", p.disk_wait);
  }
  out += ']';
}

void append_functions(const Report& report, std::string& out) {
  const StringTable& strings = report.run->strings;
  out += '[';
  for (size_t i = 0; i < report.functions.functions.size(); ++i) {
    const FunctionCost& f = report.functions.functions[i];
    if (i) out += ',';
    JsonObject o(out);
    o.text("name", strings.get(f.function)).text("file", strings.get(f.file));
    o.text("kind", f.kind == FrameKind::kPython ? "python" : f.kind == FrameKind::kNative ? "native" : "marker");
    o.number("self_ns", f.self_ns).number("total_ns", f.total_ns);
  }
  out += ']';
}

void append_report(const Report& report, std::string& out) {
  JsonObject root(out);
  root.text("schema", "stepscope.report/1").text("source", report.source);
  root.field("metadata");
  {
    JsonObject metadata(out);
    for (const auto& [key, value] : report.run->metadata) metadata.text(key, value);
  }
  root.field("processes");
  append_processes(report, out);
  root.field("profile");
  JsonObject profile(out);
  profile.text("basis", basis_name(report.profile_source));
  profile.field("includes_idle");
  out += report.includes_idle ? "true" : "false";
  profile.number("total_ns", report.functions.profile_ns);
  profile.field("functions");
  append_functions(report, out);
}

}  // namespace

void write_report_json(const Report& report, std::ostream& out) {
  std::string text;
  append_report(report, text);
  out << text << '\n';
}

}  // namespace stepscope
