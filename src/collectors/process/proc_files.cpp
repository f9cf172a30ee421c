#include "collectors/process/proc_files.hpp"

#include <unistd.h>

#include "util/unique_fd.hpp"

namespace stepscope {

std::string task_path(pid_t pid, int64_t tid, const char* file) {
  return "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + file;
}

std::optional<std::string> read_proc_file(const std::string& path) {
  UniqueFd fd = UniqueFd::open_read_only(path.c_str());
  if (!fd.valid()) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

std::string_view status_field(std::string_view status, std::string_view key) {
  // Finding the key itself skips most lines in one search, where walking
  // line by line searched once per line; a match counts only at the start
  // of a line and before its ':'.
  for (size_t pos = status.find(key); pos != std::string_view::npos; pos = status.find(key, pos + 1)) {
    const size_t colon = pos + key.size();
    if ((pos != 0 && status[pos - 1] != '\n') || colon >= status.size() || status[colon] != ':') continue;
    std::string_view value = status.substr(colon + 1);
    value = value.substr(0, value.find('\n'));
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    return value;
  }
  return {};
}

}  // namespace stepscope
