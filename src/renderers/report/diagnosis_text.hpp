// The diagnosis on a terminal: the verdict line and the findings with their
// evidence and remedy, best first.
#pragma once

#include <ostream>

#include "analyses/diagnosis/diagnosis.hpp"
#include "renderers/terminal_style.hpp"

namespace stepscope {

// "Verdict: ..." from the best finding, or what the rules could not see.
void write_verdict(const Diagnosis& diagnosis, const TextStyle& style, std::ostream& out);

// The first `detailed` findings in full (evidence, remedy), the rest one line each.
void write_findings(const Diagnosis& diagnosis, const TextStyle& style, std::ostream& out, size_t detailed);

}  // namespace stepscope
