// Which CPython a process runs, from what its binaries say about themselves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepscope::python {

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = -1;    // -1 when only the minor version is known
  std::string text;  // "3.11.7", "3.13.0rc1", or "3.9" when the micro version is unknown
};

// From the value of Py_Version (3.11+), which holds PY_VERSION_HEX:
// 0xMMmmuuLS, L the release level (a, b, rc, final) and S its serial.
PythonVersion version_from_hex(uint64_t hex);

// From a mapped file's name: libpython3.9.so.1.0, libpython3.10d.so, python3.11.
std::optional<PythonVersion> version_from_file_name(std::string_view path);

// From the PY_VERSION string ("3.9.18") in an image's read-only data, for
// the minor version the file name gave: the first NUL-terminated
// "major.minor.N" there (the linker may have merged it into the tail of a
// longer string, so only its end is anchored).
std::optional<PythonVersion> version_from_rodata(std::string_view rodata, int major, int minor);

}  // namespace stepscope::python
