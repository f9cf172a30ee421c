// Reading str and bytes objects out of another process.
#pragma once

#include <cstdint>
#include <string>

#include "collectors/process/memory.hpp"
#include "collectors/python/layout.hpp"

namespace stepscope::python {

// Longest str read, in code points, and longest bytes object: names and
// file names are far shorter, so anything longer is garbage or hostile.
inline constexpr int64_t kMaxStringLength = 4096;
inline constexpr int64_t kMaxBytesLength = 1 << 20;

// The fixed header of a str object: what says how to read its text.
struct StrHeader {
  std::string bytes;  // the raw header, which callers compare to detect reuse
  int64_t length = 0;  // in code points
  unsigned kind = 1;   // bytes per code point
  bool ascii = false;
};

// Reads the header of the compact str at `address`. False when unreadable or
// not a compact str (the only kind code objects hold).
bool read_str_header(const ProcessMemory& memory, const PythonLayout& layout, uint64_t address,
                     StrHeader& header);

// The text of that str as UTF-8, at most kMaxStringLength code points (lone
// surrogates are kept as their 3-byte encodings; renderers escape them).
bool read_str_text(const ProcessMemory& memory, const PythonLayout& layout, uint64_t address,
                   const StrHeader& header, std::string& out);

// The contents of the bytes object at `address`. False when unreadable or
// longer than kMaxBytesLength.
bool read_python_bytes(const ProcessMemory& memory, const PythonLayout& layout, uint64_t address,
                       std::string& out);

}  // namespace stepscope::python
