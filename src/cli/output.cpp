#include "cli/output.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope::cli {

namespace {

// Writes `file`; errors name `shown_path`, the path the user gave.
void write_file(const std::string& file, const std::string& shown_path,
                const std::function<void(std::ostream&)>& write) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(fmt::format("cannot write {}: {}", shown_path, std::strerror(errno)));
  write(out);
  out.flush();
  if (!out) throw InputError(fmt::format("cannot write {}: {}", shown_path, std::strerror(errno)));
}

}  // namespace

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  std::error_code status_error;
  auto status = std::filesystem::status(path, status_error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    // A device, pipe or terminal (/dev/null, /dev/stdout): write to it; a
    // rename would replace it with a file.
    write_file(path, path, write);
    return;
  }
  std::string temporary = path + ".partial";
  write_file(temporary, path, write);
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw InputError(fmt::format("cannot write {}: {}", path, ec.message()));
}

}  // namespace stepscope::cli
