// `stepscope dump` output: a process tree's stacks as text (like py-spy
// dump) or as one JSON document.
#pragma once

#include <ostream>
#include <vector>

#include "collectors/stack_snapshot.hpp"

namespace stepscope {

void write_stack_snapshot_text(const std::vector<ProcessSnapshot>& processes, std::ostream& out);
void write_stack_snapshot_json(const std::vector<ProcessSnapshot>& processes, std::ostream& out);

// "running", "idle", "disk wait" or "unknown".
const char* thread_state_name(ThreadState state);

}  // namespace stepscope
