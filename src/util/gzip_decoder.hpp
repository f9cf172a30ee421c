// Streaming inflate of one or more concatenated gzip members (torch.profiler
// writes traces as .json.gz), with Intel's ISA-L: its inflate is several
// times faster than zlib's, and for a gzip trace inflating is most of the
// reading thread's work (bench/README.md, "gzip traces"). Member headers and
// trailers (CRC-32 and length) are checked by ISA-L.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/error.hpp"

struct inflate_state;

namespace stepscope {

class GzipDecoder {
 public:
  // Fills a buffer with up to `count` compressed bytes; 0 only at the end.
  using Fill = std::function<size_t(char*, size_t)>;

  explicit GzipDecoder(std::string source_name);
  GzipDecoder(const GzipDecoder&) = delete;
  GzipDecoder& operator=(const GzipDecoder&) = delete;
  ~GzipDecoder();

  // Up to `count` inflated bytes into `destination`, taking compressed bytes
  // from `fill` as needed; 0 only at the end of the last member. Throws
  // InputError "NAME: corrupt gzip data: WHY" for invalid or truncated data
  // and for bytes after a member that do not start another one.
  size_t read(char* destination, size_t count, const Fill& fill);

 private:
  size_t take_buffered(char* destination, size_t count);
  size_t inflate_window(char* window, size_t size, const Fill& fill);
  bool refill(const Fill& fill);
  void start_member();
  InputError corruption(const std::string& why) const;

  std::string source_name_;
  std::vector<char> input_;
  std::vector<char> buffered_;  // inflated for a read with too little room for ISA-L
  size_t buffered_begin_ = 0;
  size_t buffered_end_ = 0;
  std::unique_ptr<inflate_state> state_;  // 85 KB: not on the stack

  uint64_t consumed_ = 0;       // compressed bytes taken in, for error offsets
  std::exception_ptr error_;    // a corruption: thrown by every read once the bytes before it are out
  bool in_member_ = false;
  // The source has ended; ISA-L may still hold inflated bytes in its own
  // buffer, and they come out before "truncated".
  bool input_ended_ = false;
  bool finished_ = false;
};

}  // namespace stepscope
