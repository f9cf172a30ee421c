// `stepscope dump` output: a process tree's stacks as text (like py-spy
// dump) or as one JSON document of format stepscope.dump/1
// (docs/dump-format.md), which `report DUMP...` reads back.
#pragma once

#include <ostream>
#include <vector>

#include "run/dump.hpp"

namespace stepscope {

void write_dump_text(const Dump& dump, std::ostream& out);
void write_dump_json(const Dump& dump, std::ostream& out);

}  // namespace stepscope
