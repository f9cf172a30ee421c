#include "util/file_bytes.hpp"

#include <algorithm>

#include "util/byte_stream.hpp"

namespace stepscope {

namespace {

// Everything `stream` yields, with kFileBytesPadding spare capacity. A plain
// regular file fills the first allocation exactly.
std::string read_all(ByteStream& stream) {
  std::string bytes;
  size_t first = stream.compressed() ? stream.size_hint() * 4 : stream.size_hint();
  bytes.resize(std::max<size_t>(first, 1 << 12) + kFileBytesPadding);
  size_t used = 0;
  for (;;) {
    if (bytes.size() - used <= kFileBytesPadding) bytes.resize(bytes.size() * 2);
    size_t got = stream.read(bytes.data() + used, bytes.size() - used - kFileBytesPadding);
    if (got == 0) break;
    used += got;
  }
  bytes.resize(used);  // keeps the capacity, hence the padding
  return bytes;
}

}  // namespace

std::string inflate_gzip(std::string_view compressed, const std::string& source_name) {
  ByteStream stream = ByteStream::from_memory(compressed, source_name);
  return read_all(stream);
}

std::string read_file_bytes(const std::string& path) {
  ByteStream stream = ByteStream::open_file(path);
  return read_all(stream);
}

}  // namespace stepscope
