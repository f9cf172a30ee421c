// The environment a process started with (/proc/PID/environ): what a
// launcher told it. torchrun gives each rank RANK, LOCAL_RANK and
// WORLD_SIZE, so the recorder knows the ranks of a job without its hooks,
// in launch and attach mode alike.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope {

// The variables of `names` that are set in `environ_text` (NAME=VALUE
// entries separated by NUL bytes, as /proc/PID/environ holds them).
std::map<std::string, std::string> environment_values(std::string_view environ_text,
                                                      const std::vector<std::string_view>& names);

// The same, read from /proc/PID/environ; empty when it cannot be read (the
// process is gone, or belongs to another user).
std::map<std::string, std::string> process_environment_values(pid_t pid, const std::vector<std::string_view>& names);

}  // namespace stepscope
