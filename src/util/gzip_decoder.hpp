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
  bool refill(const Fill& fill);
  void start_member();
  [[noreturn]] void fail(const std::string& why) const;

  std::string source_name_;
  std::vector<char> input_;
  std::unique_ptr<inflate_state> state_;  // 85 KB: not on the stack
  // Inflates into `destination`, counting in `produced` as it goes, so that a
  // caller still knows what came before an error.
  void inflate_into(char* destination, size_t count, const Fill& fill, size_t& produced);

  uint64_t consumed_ = 0;                 // compressed bytes taken in, for error offsets
  std::exception_ptr pending_error_;      // a corruption found after bytes a read returned
  bool in_member_ = false;
  // The source has ended; ISA-L may still hold inflated bytes in its own
  // buffer, and they come out before "truncated", whatever the read sizes.
  bool input_ended_ = false;
  bool finished_ = false;
};

}  // namespace stepscope
