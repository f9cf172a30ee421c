// Small text files under /proc (status, maps, stat, comm, cmdline).
//
// They are read whole with plain read(2): their size is unknown in advance
// (stat reports 0) and they vanish when the process exits, which is a normal
// event for a profiler, not an error, hence std::optional instead of throwing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepscope {

// The whole contents of `path`, or nullopt when it cannot be opened or read.
std::optional<std::string> read_proc_file(const std::string& path);

// /proc/PID/task/TID/FILE.
std::string task_path(pid_t pid, int64_t tid, const char* file);

// The value after "Key:" on the line of /proc/PID/status that starts with
// `key` (e.g. "Uid", "CapEff"), leading blanks removed; empty if absent.
std::string_view status_field(std::string_view status, std::string_view key);

}  // namespace stepscope
