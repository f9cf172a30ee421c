#include "renderers/report/hang_text.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"
#include "renderers/report/diagnosis_text.hpp"

namespace stepscope {

namespace {

constexpr size_t kDetailedFindings = 3;

std::string what_tells(const HangAnalysis& hang) {
  return hang.source == "flight_recorder" ? "torch's Flight Recorder and the stacks" : "the stacks alone";
}

}  // namespace

std::string rank_place_text(const RankPlace& place) {
  switch (place.where) {
    case RankWhere::kInCollective:
      return "waits in " + (place.collective->seq >= 0
                                ? fmt::format("{} #{} (group {})", place.collective->name, place.collective->seq,
                                              place.collective->process_group)
                                : place.collective->name);
    case RankWhere::kElsewhere:
      return fmt::format("{}, {}", describe_frames(place.frames, 2), thread_state_name(place.state));
    case RankWhere::kExited:
      return exit_text(place);
    case RankWhere::kAbsent:
      break;
  }
  return "in none of the dumps";
}

void write_hang_verdict(const HangAnalysis& hang, const TextStyle& style, std::ostream& out) {
  write_verdict(hang.diagnosis, style, out);
  write_findings(hang.diagnosis, style, out, kDetailedFindings);
}

void write_hang_text(const HangAnalysis& hang, const TextStyle& style, std::ostream& out) {
  std::string job = hang.job.empty() ? "" : fmt::format(" of job {}", printable_utf8(hang.job));
  out << style.bold(fmt::format("Hang{}: {} ranks, {} inputs", job, hang.ranks.size(), hang.inputs.size()))
      << fmt::format(" (from {})\n", what_tells(hang));
  for (const std::string& warning : hang.warnings) out << style.yellow("warning: ") << printable_utf8(warning) << '\n';
  if (!hang.ranks.empty()) {
    out << '\n' << style.bold("Ranks") << '\n'
        << fmt::format("  {:>5}  {:<16} {:>8}  {}\n", "rank", "host", "pid", "where");
    for (const RankPlace& place : hang.ranks) {
      std::string pid = place.pid > 0 ? std::to_string(place.pid) : "-";
      std::string host = place.host.empty() ? "-" : printable_shortened(place.host, 16);
      out << fmt::format("  {:>5}  {:<16} {:>8}  {}\n", place.rank, host, pid, printable_utf8(rank_place_text(place)));
    }
  }
  write_hang_verdict(hang, style, out);
}

}  // namespace stepscope
