#include "util/file_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope {

namespace {

// Closes the descriptor on every path out of read_file_bytes.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void throw_cannot_read(const std::string& path, int error_number) {
  throw InputError(fmt::format("cannot read {}: {}", path, std::strerror(error_number)));
}

ssize_t read_retrying(int fd, char* destination, size_t count, const std::string& path) {
  for (;;) {
    ssize_t got = ::read(fd, destination, count);
    if (got >= 0) return got;
    if (errno != EINTR) throw_cannot_read(path, errno);
  }
}

// Reads until end of file; works for pipes and /proc files too, whose size
// fstat does not know. A regular file fills the first allocation exactly; the
// probe read then confirms the end without growing the buffer.
std::string read_all(int fd, const std::string& path, size_t size_hint) {
  std::string bytes;
  bytes.resize(size_hint + kFileBytesPadding);
  size_t used = 0;
  for (;;) {
    size_t room = bytes.size() - used - kFileBytesPadding;
    if (room == 0) {
      char probe[4096];
      ssize_t got = read_retrying(fd, probe, sizeof probe, path);
      if (got == 0) break;
      bytes.resize(std::max<size_t>(bytes.size() * 2, 1 << 16));
      std::memcpy(bytes.data() + used, probe, static_cast<size_t>(got));
      used += static_cast<size_t>(got);
      continue;
    }
    ssize_t got = read_retrying(fd, bytes.data() + used, room, path);
    if (got == 0) break;
    used += static_cast<size_t>(got);
  }
  bytes.resize(used);  // keeps the capacity, hence the padding
  return bytes;
}

// The gzip trailer's ISIZE: the last member's size modulo 2^32. Only a hint
// for the first allocation, never trusted beyond that.
size_t gzip_size_hint(std::string_view compressed) {
  if (compressed.size() < 18) return 0;
  const auto* tail = reinterpret_cast<const unsigned char*>(compressed.data() + compressed.size() - 4);
  uint32_t isize = uint32_t{tail[0]} | uint32_t{tail[1]} << 8 | uint32_t{tail[2]} << 16 |
                   uint32_t{tail[3]} << 24;
  // Deflate cannot expand more than about 1032:1; a larger claim is a lie.
  size_t most_plausible = compressed.size() * 1032;
  return std::min<size_t>(isize, most_plausible);
}

class GzipInflater {
 public:
  explicit GzipInflater(const std::string& source_name) : source_name_(source_name) {
    // 16 + MAX_WBITS: expect a gzip header and trailer, not a zlib one.
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) fail("cannot initialise zlib");
  }
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;
  ~GzipInflater() { inflateEnd(&stream_); }

  std::string inflate_all(std::string_view compressed) {
    std::string out;
    // The slack lets zlib read the trailer without a (copying) second growth.
    constexpr size_t kSlack = 1 << 16;
    out.resize(std::max(gzip_size_hint(compressed), compressed.size() * 4) + kSlack +
               kFileBytesPadding);
    size_t consumed = 0;
    size_t produced = 0;
    while (consumed < compressed.size()) {
      inflate_member(compressed, consumed, out, produced);
      if (consumed < compressed.size() && !is_gzip(compressed.substr(consumed))) {
        fail(fmt::format("unexpected bytes after gzip member at byte {}", consumed));
      }
      if (inflateReset(&stream_) != Z_OK) fail("cannot reset zlib");
    }
    out.resize(produced);
    return out;
  }

 private:
  // Inflates one gzip member starting at `consumed`; advances both counters.
  void inflate_member(std::string_view compressed, size_t& consumed, std::string& out,
                      size_t& produced) {
    for (;;) {
      // The last kFileBytesPadding bytes are never handed to zlib, so the
      // padding survives the final resize.
      if (out.size() - produced <= kFileBytesPadding) out.resize(out.size() * 2);
      size_t in_chunk = std::min<size_t>(compressed.size() - consumed, UINT_MAX);
      size_t out_chunk = std::min<size_t>(out.size() - produced - kFileBytesPadding, UINT_MAX);
      stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
      stream_.avail_in = static_cast<uInt>(in_chunk);
      stream_.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      stream_.avail_out = static_cast<uInt>(out_chunk);
      int status = inflate(&stream_, Z_NO_FLUSH);
      consumed += in_chunk - stream_.avail_in;
      produced += out_chunk - stream_.avail_out;
      if (status == Z_STREAM_END) return;
      if (status == Z_BUF_ERROR && stream_.avail_in == 0 && consumed == compressed.size()) {
        fail("the data is truncated");
      }
      if (status != Z_OK && status != Z_BUF_ERROR) {
        fail(stream_.msg != nullptr ? stream_.msg : fmt::format("zlib error {}", status));
      }
    }
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(fmt::format("{}: corrupt gzip data: {}", source_name_, why));
  }

  const std::string& source_name_;
  z_stream stream_{};
};

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string inflate_gzip(std::string_view compressed, const std::string& source_name) {
  return GzipInflater(source_name).inflate_all(compressed);
}

std::string read_file_bytes(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw_cannot_read(path, errno);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw_cannot_read(path, errno);
  if (S_ISDIR(info.st_mode)) throw_cannot_read(path, EISDIR);
  size_t size_hint = S_ISREG(info.st_mode) ? static_cast<size_t>(info.st_size) : 0;
  std::string bytes = read_all(fd.get(), path, size_hint);
  if (!is_gzip(bytes)) return bytes;
  return inflate_gzip(bytes, path);
}

}  // namespace stepscope
