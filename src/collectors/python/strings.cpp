#include "collectors/python/strings.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

namespace stepscope::python {

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Code points of `width` bytes each (1: Latin-1, 2: UCS-2, 4: UCS-4) to UTF-8.
void decode_code_points(const char* data, int64_t length, unsigned width, std::string& out) {
  out.clear();
  for (int64_t i = 0; i < length; ++i) {
    uint32_t cp = 0;
    std::memcpy(&cp, data + i * width, width);  // little-endian: the low bytes
    append_utf8(out, cp);
  }
}

}  // namespace

bool read_str_header(const ProcessMemory& memory, const PythonLayout& layout, uint64_t address,
                     StrHeader& header) {
  const auto& u = layout.unicode;
  if (address == 0 || u.ascii_size > 256) return false;
  header.bytes.resize(u.ascii_size);
  if (!memory.read(address, header.bytes.data(), header.bytes.size())) return false;
  uint32_t state = 0;
  std::memcpy(&header.length, header.bytes.data() + u.length, sizeof header.length);
  std::memcpy(&state, header.bytes.data() + u.state, sizeof state);
  header.kind = (state & u.kind_mask) >> std::countr_zero(u.kind_mask);
  header.ascii = (state & u.ascii_mask) != 0;
  const bool compact = (state & u.compact_mask) != 0;
  return compact && header.length >= 0 &&
         (header.kind == 1 || header.kind == 2 || header.kind == 4);
}

bool read_str_text(const ProcessMemory& memory, const PythonLayout& layout, uint64_t address,
                   const StrHeader& header, std::string& out) {
  const int64_t kept = std::min(header.length, kMaxStringLength);
  const uint64_t data =
      address + (header.ascii ? layout.unicode.ascii_size : layout.unicode.compact_size);
  if (header.ascii) {
    out.resize(static_cast<size_t>(kept));
    return memory.read(data, out.data(), out.size());
  }
  std::vector<char> raw(static_cast<size_t>(kept) * header.kind);
  if (!memory.read(data, raw.data(), raw.size())) return false;
  decode_code_points(raw.data(), kept, header.kind, out);
  return true;
}

bool read_python_bytes(const ProcessMemory& memory, const PythonLayout& layout, uint64_t address,
                       std::string& out) {
  int64_t size = 0;
  if (address == 0 || !memory.read_value(address + layout.bytes.ob_size, size)) return false;
  if (size < 0 || size > kMaxBytesLength) return false;
  out.resize(static_cast<size_t>(size));
  return memory.read(address + layout.bytes.ob_sval, out.data(), out.size());
}

}  // namespace stepscope::python
