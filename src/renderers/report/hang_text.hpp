// `report DUMP.json...` on a terminal: the ranks of the hung job, where each
// one is, and the verdict with its findings (analyses/collective_hang.hpp).
#pragma once

#include <ostream>

#include "analyses/collective_hang.hpp"
#include "renderers/terminal_style.hpp"

namespace stepscope {

void write_hang_text(const HangAnalysis& hang, const TextStyle& style, std::ostream& out);

// Just "Verdict: ..." and the findings: what `dump` adds under the stacks.
void write_hang_verdict(const HangAnalysis& hang, const TextStyle& style, std::ostream& out);

// Where a rank is, in a few words: "waits in gloo:all_reduce #11 ...".
std::string rank_place_text(const RankPlace& place);

}  // namespace stepscope
