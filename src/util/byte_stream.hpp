// Reading an input in pieces, transparently inflating gzip (torch.profiler
// writes traces as .json.gz), so a multi-GB trace passes through a buffer of
// a few MB instead of being held whole. Errors are InputError naming the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace stepscope {

// A source of raw bytes: a file descriptor or a piece of memory.
class RawSource {
 public:
  virtual ~RawSource() = default;
  // Up to `count` bytes into `destination`; 0 only at the end.
  virtual size_t read(char* destination, size_t count) = 0;
};

class GzipDecoder;
class MappedFile;

// The decompressed bytes of a file or of memory: when the first two bytes are
// the gzip magic (1f 8b) everything is inflated, concatenated gzip members
// included; otherwise bytes pass through unchanged.
class ByteStream {
 public:
  // Throws InputError "cannot read PATH: REASON" when the file cannot be opened.
  static ByteStream open_file(const std::string& path);
  // The same, but a plain (not gzip) regular file is mapped in memory
  // whole, for a reader that takes it in place (take_mapped); others read
  // it as from any file. For the trace import (util/mapped_file.hpp).
  static ByteStream map_file(const std::string& path);
  // `bytes` must outlive the stream.
  static ByteStream from_memory(std::string_view bytes, const std::string& source_name);

  ByteStream(ByteStream&&) noexcept;
  ByteStream& operator=(ByteStream&&) noexcept;
  ~ByteStream();

  // Up to `count` decompressed bytes; 0 only at the end of the input.
  // Throws InputError "NAME: corrupt gzip data: ..." when inflating fails and
  // "cannot read NAME: ..." on a read error.
  size_t read(char* destination, size_t count);

  // The input's size on disk (compressed), when known; 0 otherwise. Used
  // only as a hint for reservations.
  uint64_t size_hint() const { return size_hint_; }
  bool compressed() const { return gzip_ != nullptr; }
  const std::string& name() const { return name_; }

  // The whole input in place, when it is a file that map_file mapped and
  // read() has handed out none of it; empty otherwise. Zero bytes
  // (MappedFile::kPadding) follow it. read() then counts the stream as read
  // to its end; later calls give the same view (an import that could not
  // start its reading thread starts over on one). The view lives as long as
  // the stream.
  std::string_view take_mapped();
  // Drops the mapped pages wholly before `position` (in take_mapped()'s
  // view) from memory as the reader is done with them; they are read back
  // from the page cache if touched again. One caller at a time.
  void release_mapped_before(const char* position) noexcept;
  // Drops every mapped page: the reader is done with the input.
  void release_mapped() noexcept;

 private:
  ByteStream(std::unique_ptr<RawSource> raw, std::string name, uint64_t size_hint, MappedFile* mapped = nullptr);
  size_t read_raw(char* destination, size_t count);

  std::unique_ptr<RawSource> raw_;
  std::string name_;
  uint64_t size_hint_ = 0;
  std::unique_ptr<GzipDecoder> gzip_;
  MappedFile* mapped_ = nullptr;  // raw_'s mapping, when it has one
  bool mapped_taken_ = false;
  // Bytes read while sniffing the gzip magic, handed out before the rest.
  char head_[2] = {};
  size_t head_size_ = 0;
  size_t head_pos_ = 0;
};

// Whether `bytes` start with the gzip magic number.
bool is_gzip(std::string_view bytes);

}  // namespace stepscope
