#include "renderers/compare/json.hpp"

#include <string>

#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

void append_side(std::string& out, const std::string& label, const std::string& origin, size_t steps,
                 size_t skipped) {
  JsonObject o(out);
  o.text("label", label).text("origin", origin).number("steps", steps).number("warmup_skipped", skipped);
}

void append_metric(std::string& out, const MetricComparison& m) {
  JsonObject o(out);
  o.text("name", m.name).text("unit", m.unit).boolean("higher_is_better", m.higher_is_better);
  o.number("base", m.base).number("cur", m.cur).number("change", m.change.estimate);
  if (m.p_value) {
    o.number("change_low", m.change.low).number("change_high", m.change.high).number("p_value", *m.p_value);
  } else {
    o.literal("change_low", "null").literal("change_high", "null").literal("p_value", "null");
  }
  o.number("base_steps", m.base_steps).number("cur_steps", m.cur_steps);
  o.text("verdict", verdict_name(m.verdict)).boolean("gating", m.gating);
}

void append_metrics(JsonObject& o, std::string& out, const char* key, const std::vector<MetricComparison>& metrics) {
  o.field(key);
  append_json_array(out, metrics, append_metric);
}

void append_section(std::string& out, const DiffTable& table) {
  JsonObject o(out);
  o.text("key", table.key).text("title", table.title).text("unit", table.unit);
  o.field("rows");
  append_json_array(out, table.rows, [](std::string& s, const DiffRow& row) {
    JsonObject r(s);
    r.text("name", row.name).number("base", row.base).number("cur", row.cur).number("diff", row.cur - row.base);
  });
}

}  // namespace

void write_compare_json(const CompareResult& r, std::ostream& out) {
  std::string s;
  {
    JsonObject o(s);
    o.text("format", kCompareJsonFormat);
    o.boolean("regressed", r.regressed());
    o.field("base");
    append_side(s, r.base_label, r.base_origin, r.base_steps, r.base_skipped);
    o.field("cur");
    append_side(s, r.cur_label, r.cur_origin, r.cur_steps, r.cur_skipped);
    o.number("threshold", r.threshold).number("confidence", r.confidence);
    o.number("resamples", r.resamples).number("seed", r.seed);
    append_metrics(o, s, "metrics", r.metrics);
    append_metrics(o, s, "phases", r.phases);
    o.field("sections");
    append_json_array(s, r.sections, append_section);
    o.field("notes");
    append_json_array(s, r.notes, [](std::string& t, const std::string& note) { append_json_string(t, note); });
  }
  out << s << '\n';
}

}  // namespace stepscope
