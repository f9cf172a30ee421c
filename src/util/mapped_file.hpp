// A regular file mapped read-only in memory whole, for readers that would
// otherwise copy it through a buffer with read(): on the import of a 508 MB
// trace that copy was 7 % of the CPU, all of it on the reading thread
// (bench/README.md, "Trace import"). Mapped pages count in the process's
// RSS, so a reader drops what it has consumed (release_before) and the
// resident part stays a few MB.
//
// If the file shrinks while mapped, touching a page past its new end
// raises SIGBUS: the one risk a mapping adds over read(). The CLI turns it
// into a clear error (util/bus_error.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace stepscope {

class MappedFile {
 public:
  // Zero bytes readable after the contents, so a SIMD parser may load past
  // the end (TraceEventScanner::kPadding, simdjson's padding).
  static constexpr size_t kPadding = 64;
  // Pages are dropped in steps of this many bytes: each step is a system
  // call and a TLB flush on every core the process runs on.
  static constexpr size_t kReleaseStep = size_t{2} << 20;

  // Maps `size` bytes of the open file `fd` (a regular file of at least
  // that size); nullopt when the system refuses (the caller then reads).
  static std::optional<MappedFile> map(int fd, uint64_t size) noexcept;

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The contents; kPadding zero bytes follow them.
  std::string_view bytes() const { return {data_, size_}; }

  // Drops the pages wholly before `position` (within bytes()) from memory,
  // in steps of kReleaseStep. Harmless if they are touched again: they are
  // read back from the page cache. Not thread-safe: one caller at a time.
  void release_before(const char* position) noexcept;
  // Drops every page: the reader is done (what it kept, it copied).
  void release_all() noexcept;

 private:
  MappedFile(char* data, size_t size, size_t mapped) : data_(data), size_(size), mapped_(mapped) {}

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;    // bytes of the whole mapping, padding included
  size_t released_ = 0;  // bytes from data_ already dropped
};

}  // namespace stepscope
