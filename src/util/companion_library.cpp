#include "util/companion_library.hpp"

#include <cstdlib>
#include <filesystem>

namespace stepscope {

namespace {

bool is_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

std::string find_companion_library(std::string_view file_name, const char* env_override, const char* build_path) {
  if (const char* env = std::getenv(env_override); env && *env) {
    return is_file(env) ? std::filesystem::absolute(env).string() : std::string{};
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* relative : {".", "../lib/stepscope"}) {
      std::filesystem::path path = (exe.parent_path() / relative / file_name).lexically_normal();
      if (is_file(path)) return path.string();
    }
  }
  if (build_path && is_file(build_path)) return build_path;
  return {};
}

}  // namespace stepscope
