#include "collectors/process/environment.hpp"

#include <algorithm>

#include "collectors/process/proc_files.hpp"

namespace stepscope {

std::map<std::string, std::string> environment_values(std::string_view environ_text,
                                                      const std::vector<std::string_view>& names) {
  std::map<std::string, std::string> found;
  while (!environ_text.empty()) {
    size_t end = std::min(environ_text.find('\0'), environ_text.size());
    std::string_view entry = environ_text.substr(0, end);
    environ_text.remove_prefix(std::min(end + 1, environ_text.size()));
    size_t equals = entry.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, equals);
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      found[std::string(name)] = std::string(entry.substr(equals + 1));
    }
  }
  return found;
}

std::map<std::string, std::string> process_environment_values(pid_t pid, const std::vector<std::string_view>& names) {
  auto text = read_proc_file("/proc/" + std::to_string(pid) + "/environ");
  if (!text) return {};
  return environment_values(*text, names);
}

}  // namespace stepscope
