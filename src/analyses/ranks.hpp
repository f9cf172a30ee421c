// Which rank of a distributed job a run, or a process of it, is: a torch.profiler
// trace says so in its distributedInfo; a recorded process, through the RANK its
// hooks read from its environment (metadata hooks.PID.rank), or the recorder
// read there itself (process.PID.rank: without hooks, and in attach mode).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "run/run.hpp"

namespace stepscope {

// What the hooks reported about process `pid` (metadata hooks.PID.KEY), else
// what the recorder read in its environment (process.PID.KEY), if anything.
std::optional<std::string> process_fact(const Run& run, int64_t pid, std::string_view key);

// The rank reported for `pid`, when it is a plain decimal number.
std::optional<int64_t> process_rank(const Run& run, int64_t pid);
// Any such fact (local_rank, world_size) as a plain decimal number.
std::optional<int64_t> process_number(const Run& run, int64_t pid, std::string_view key);

// The rank a trace says it is (metadata distributedInfo's "rank"), if any.
std::optional<int64_t> trace_rank(const Run& run);

// The rank of a run of one rank: its trace's, else the one rank its recorded
// processes reported; none when they reported several, or none.
std::optional<int64_t> run_rank(const Run& run);

}  // namespace stepscope
