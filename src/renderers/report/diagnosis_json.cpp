#include "renderers/report/diagnosis_json.hpp"

#include "renderers/json_writer.hpp"

namespace stepscope {

void append_finding_fields(JsonObject& o, std::string& s, const Finding& f) {
  o.text("id", f.id).text("severity", severity_name(f.severity)).text("title", f.title);
  o.field("evidence");
  append_json_array(s, f.evidence, [](std::string& e, const std::string& text) { append_json_string(e, text); });
  o.text("recommendation", f.recommendation);
  o.number("share", f.share);
  if (f.expected_speedup) {
    o.number("expected_speedup", *f.expected_speedup);
  } else {
    o.literal("expected_speedup", "null");
  }
  if (!f.impact.empty()) o.text("impact", f.impact);
  if (!f.ranks.empty()) {
    o.field("ranks");
    append_json_array(s, f.ranks, [](std::string& r, const std::string& label) { append_json_string(r, label); });
  }
}

void append_diagnosis_json(const Diagnosis& diagnosis, std::string& out) {
  append_json_array(out, diagnosis.findings, [](std::string& s, const Finding& f) {
    JsonObject o(s);
    append_finding_fields(o, s, f);
  });
}

}  // namespace stepscope
