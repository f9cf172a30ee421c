#include "renderers/report/hang_json.hpp"

#include "renderers/json_writer.hpp"
#include "renderers/report/diagnosis_json.hpp"
#include "renderers/report/hang_text.hpp"

namespace stepscope {

namespace {

const char* where_name(RankWhere where) {
  switch (where) {
    case RankWhere::kInCollective:
      return "collective";
    case RankWhere::kElsewhere:
      return "elsewhere";
    case RankWhere::kExited:
      return "exited";
    case RankWhere::kAbsent:
      break;
  }
  return "absent";
}

void append_collective(std::string& out, const CollectiveRef& ref) {
  JsonObject o(out);
  o.text("name", ref.name).number_or_null("seq", ref.seq >= 0 ? std::optional<int64_t>(ref.seq) : std::nullopt);
  o.text_or_null("process_group", ref.process_group).text_or_null("group_name", ref.group_name);
}

void append_ranks(std::string& out, const std::vector<int64_t>& ranks) {
  append_json_array(out, ranks, [](std::string& s, int64_t rank) { s += std::to_string(rank); });
}

void append_rank(std::string& out, const RankPlace& place) {
  JsonObject o(out);
  o.number("rank", place.rank).text_or_null("host", place.host).text_or_null("source", place.source);
  o.number_or_null("pid", place.pid > 0 ? std::optional<int64_t>(place.pid) : std::nullopt);
  o.text("where", where_name(place.where)).text("summary", rank_place_text(place)).field("collective");
  if (place.collective) {
    append_collective(out, *place.collective);
  } else {
    out += "null";
  }
  o.text("state", thread_state_name(place.state)).boolean("flight_recorder", place.flight_recorder);
  o.field("frames");
  append_json_array(out, place.frames, [](std::string& s, const SnapshotFrame& frame) {
    JsonObject f(s);
    f.text("function", frame.function).text("file", frame.file).number("line", frame.line);
  });
  o.number_or_null("exit_status", place.exit_status).text_or_null("exception", place.exception);
}

// A finding like the report's, with the hang's own fields after the common ones.
void append_hang(std::string& out, const HangFinding& hang) {
  JsonObject o(out);
  append_finding_fields(o, out, hang.finding);
  o.field("collective");
  append_collective(out, hang.collective);
  o.field("entered_ranks");
  append_ranks(out, hang.entered_ranks);
  o.field("missing_ranks");
  append_ranks(out, hang.missing_ranks);
  o.field("unknown_ranks");
  append_ranks(out, hang.unknown_ranks);
}

}  // namespace

void write_hang_json(const HangAnalysis& hang, std::ostream& out) {
  std::string text;
  {
    JsonObject root(text);
    root.text("schema", "stepscope.hang/1").field("inputs");
    append_json_array(text, hang.inputs, [](std::string& s, const std::string& input) { append_json_string(s, input); });
    root.text_or_null("job", hang.job).number("world_size", hang.world_size);
    root.text_or_null("source", hang.source).field("ranks");
    append_json_array(text, hang.ranks, append_rank);
    root.field("findings");
    append_json_array(text, hang.hangs, append_hang);
    root.text("verdict", hang.diagnosis.findings.empty() ? hang.diagnosis.note : hang.diagnosis.findings[0].title);
    root.field("warnings");
    append_json_array(text, hang.warnings, [](std::string& s, const std::string& w) { append_json_string(s, w); });
  }
  out << text << '\n';
}

}  // namespace stepscope
