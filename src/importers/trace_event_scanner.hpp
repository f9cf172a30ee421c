// Splits a Chrome trace into its pieces while reading it through one reused
// buffer of a few MB: the top-level object's header fields (before or after
// "traceEvents", as Kineto writes both) and each element of "traceEvents"
// (or of a bare top-level array), each handed out as raw JSON text for a
// real parser. Only the structure is checked here (brackets, strings,
// commas); each piece's inside is left to the parser it goes to.
//
// Errors are InputError "SOURCE: invalid JSON at byte N ...", N counting in
// the decompressed input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "util/byte_stream.hpp"

namespace stepscope {

// Something that reads an event straight from the scanner's buffer, which
// then need not look for the event's end itself.
class EventPreReader {
 public:
  // Bytes the pre-reader may load past the data it is given.
  static constexpr size_t kReadAhead = 16;
  virtual ~EventPreReader() = default;
  // Reads the event starting at data[0] ('{') if it lies whole within
  // `available` bytes and is one it can read; returns its length through
  // the closing '}', or 0 to leave the event to the scanner and its reader.
  virtual size_t pre_read(const char* data, size_t available) = 0;
};

// A buffer of the scanner: `capacity` usable bytes and
// TraceEventScanner::kPadding more allocated after them.
struct ScanBuffer {
  std::unique_ptr<char[]> bytes;
  size_t capacity = 0;

  // A new buffer. Only the padding is zeroed: the rest is written by reads
  // before it is looked at, and a buffer of 4 MB for a small trace then
  // costs no page faults beyond what the trace fills.
  static ScanBuffer make(size_t capacity);
};

// For callers that keep pieces after the scanner refills (the importer's
// reading thread, trace_event_pipeline.hpp): where the scanner would move
// the piece being read to the front of its one buffer, it takes a fresh
// buffer from here, copies that piece into it and gives the old one back.
class ScanBufferExchange {
 public:
  virtual ~ScanBufferExchange() = default;
  // A buffer with at least `capacity` usable bytes.
  virtual ScanBuffer acquire(size_t capacity) = 0;
  // The buffer the scanner leaves: every piece handed out so far lies in it.
  virtual void release(ScanBuffer buffer) = 0;
};

class TraceEventScanner {
 public:
  // Spare bytes kept allocated after every piece handed out, so a SIMD
  // parser may read past its end (simdjson::SIMDJSON_PADDING).
  static constexpr size_t kPadding = 64;
  static_assert(kPadding >= EventPreReader::kReadAhead);

  enum class Piece { kHeaderField, kEvent, kEnd };

  // `chunk_size` is the initial buffer size; the buffer grows only to hold
  // a single piece larger than it. A file that `input` has mapped
  // (ByteStream::take_mapped) is read in place instead, with no buffer.
  explicit TraceEventScanner(ByteStream& input, size_t chunk_size = size_t{4} << 20);
  TraceEventScanner(const TraceEventScanner&) = delete;
  TraceEventScanner& operator=(const TraceEventScanner&) = delete;

  // Events are offered to `reader` first (it must outlive the scanner).
  void set_pre_reader(EventPreReader* reader) { pre_reader_ = reader; }

  // Pieces stay valid after a refill: buffers are exchanged through
  // `exchange` (it must outlive the scanner) instead of reused in place.
  void set_buffer_exchange(ScanBufferExchange* exchange) { exchange_ = exchange; }

  // The next piece. Its text() stays valid until the following call (with a
  // buffer exchange: as long as the buffer it lies in).
  Piece next();

  // Whether the pre-reader has read the current event.
  bool pre_read() const { return pre_read_; }

  // The raw JSON text of the current event or header value. At least
  // kPadding allocated bytes follow it.
  std::string_view text() const { return {data_ + piece_begin_, piece_end_ - piece_begin_}; }
  size_t padded_size() const { return buffer_.capacity + kPadding - piece_begin_; }
  // The decoded key of the current header field.
  std::string_view key() const { return key_; }
  // Byte offset of text() in the (decompressed) input.
  uint64_t offset() const { return buffer_offset_ + piece_begin_; }
  // 0-based index of the current event in its array.
  size_t event_index() const { return event_index_; }

 private:
  enum class State { kStart, kObjectMember, kObjectNext, kEventFirst, kEventNext, kDone };

  Piece start();
  Piece object_member();
  Piece object_next();
  Piece event_first();
  Piece event_next();
  Piece finish_events();
  Piece finish_object();
  Piece read_event();
  void check_trailing();
  std::string read_key();

  // Cursor and buffer.
  int peek_non_space();  // the next non-whitespace byte (not consumed), -1 at end
  bool refill();         // more input after end_, keeping the piece being read
  size_t fill();
  void make_room();
  void scan_balanced(bool in_string);
  void scan_scalar();    // a number or literal, up to a delimiter
  void prefetch_ahead();

  [[noreturn]] void fail_at(uint64_t offset, std::string_view what) const;
  [[noreturn]] void fail_here(std::string_view what) const;
  [[noreturn]] void fail_truncated() const;

  ByteStream& input_;
  ScanBuffer buffer_;           // bytes null when the input is mapped
  const char* data_ = nullptr;  // buffer_'s bytes, or the mapped input
  bool mapped_ = false;
  size_t prefetched_ = 0;       // of a mapped input: lines up to here asked for
  ScanBufferExchange* exchange_ = nullptr;
  size_t end_ = 0;             // bytes of data in the buffer
  size_t pos_ = 0;             // the cursor
  size_t piece_begin_ = 0;     // the piece being read (kept on refill)
  size_t piece_end_ = 0;
  uint64_t buffer_offset_ = 0; // input offset of buffer_[0]
  bool input_ended_ = false;
  std::exception_ptr deferred_error_;  // an input error a fill met after some bytes: the next fill's

  EventPreReader* pre_reader_ = nullptr;
  bool pre_read_ = false;

  State state_ = State::kStart;
  bool top_is_array_ = false;
  bool saw_member_ = false;
  bool saw_events_ = false;
  size_t event_index_ = 0;
  size_t events_total_ = 0;
  std::string key_;
};

}  // namespace stepscope
