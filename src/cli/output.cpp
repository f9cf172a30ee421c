#include "cli/output.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope::cli {

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
    std::ofstream out(path, std::ios::binary);
    if (!out) throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    write(out);
    out.flush();
    if (!out) throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    return;
  }
  std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    write(out);
    out.flush();
    if (!out) throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw InputError(fmt::format("cannot write {}: {}", path, ec.message()));
}

}  // namespace stepscope::cli
