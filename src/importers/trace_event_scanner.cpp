#include "importers/trace_event_scanner.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>

#include "importers/json_text.hpp"
#include "util/error.hpp"
#include "util/mapped_file.hpp"

namespace stepscope {

namespace {

bool is_space(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The bytes of data[0..64) that matter to the structure, one bit per byte.
struct BlockBits {
  uint64_t quote = 0;
  uint64_t backslash = 0;
  uint64_t open = 0;   // '{' and '['
  uint64_t close = 0;  // '}' and ']'
};

#if defined(__SSE2__)
// The bits of one 16-byte quarter of a block, at its place (kQuarter 0-3;
// a constant, so the shifts are too: the compiler kept a variable one in a
// loop, perf).
template <int kQuarter>
void classify_quarter(const char* data, BlockBits& bits) {
  // c | 0x20 maps '[' and ']' onto '{' and '}', so each takes one compare.
  __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * kQuarter));
  __m128i folded = _mm_or_si128(bytes, _mm_set1_epi8(0x20));
  auto bits_of = [](__m128i hits) {
    return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(hits))) << (16 * kQuarter);
  };
  bits.quote |= bits_of(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"')));
  bits.backslash |= bits_of(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\')));
  bits.open |= bits_of(_mm_cmpeq_epi8(folded, _mm_set1_epi8('{')));
  bits.close |= bits_of(_mm_cmpeq_epi8(folded, _mm_set1_epi8('}')));
}
#endif

BlockBits classify_block(const char* data) {
  BlockBits bits;
#if defined(__SSE2__)
  classify_quarter<0>(data, bits);
  classify_quarter<1>(data, bits);
  classify_quarter<2>(data, bits);
  classify_quarter<3>(data, bits);
#else
  for (int i = 0; i < 64; ++i) {
    uint64_t bit = uint64_t{1} << i;
    char folded = static_cast<char>(data[i] | 0x20);
    if (data[i] == '"') bits.quote |= bit;
    if (data[i] == '\\') bits.backslash |= bit;
    if (folded == '{') bits.open |= bit;
    if (folded == '}') bits.close |= bit;
  }
#endif
  return bits;
}

// Bit i = XOR of bits 0..i: with quote bits, 1 from an opening quote up to
// (not including) its closing quote.
uint64_t prefix_xor(uint64_t bits) {
  // Unrolled by hand: as a loop the compiler kept it, with variable shifts.
  bits ^= bits << 1;
  bits ^= bits << 2;
  bits ^= bits << 4;
  bits ^= bits << 8;
  bits ^= bits << 16;
  bits ^= bits << 32;
  return bits;
}

// The state of TraceEventScanner::scan_balanced between 64-byte blocks.
struct BalanceState {
  int64_t depth;
  bool in_string;
  bool skip_first;        // the next block's first byte is escaped
  bool ends_with_string;  // a string value: its closing quote ends it
};

// The common block, without backslashes: strings are found all at once from
// the quotes, and only brackets outside them are looked at one by one.
std::optional<size_t> balance_block(const BlockBits& bits, BalanceState& state) {
  uint64_t strings = prefix_xor(bits.quote) ^ (state.in_string ? ~uint64_t{0} : 0);
  uint64_t opens = bits.open & ~strings;
  uint64_t brackets = (bits.open | bits.close) & ~strings;
  state.in_string = (strings >> 63) != 0;
  while (brackets != 0) {
    auto bit = static_cast<unsigned>(__builtin_ctzll(brackets));
    brackets &= brackets - 1;
    if ((opens >> bit) & 1) {
      ++state.depth;
    } else if (--state.depth == 0) {
      return bit;
    }
  }
  return std::nullopt;
}

// A block with escapes (or a string value to finish): byte by structural
// byte, skipping each escaped byte.
std::optional<size_t> balance_block_escaped(const char* data, const BlockBits& bits, size_t valid,
                                            BalanceState& state) {
  uint64_t mask = bits.quote | bits.backslash | bits.open | bits.close;
  if (state.skip_first) mask &= ~uint64_t{1};
  state.skip_first = false;
  while (mask != 0) {
    auto bit = static_cast<unsigned>(__builtin_ctzll(mask));
    mask &= mask - 1;
    char c = data[bit];
    if (state.in_string) {
      if (c == '"') {
        state.in_string = false;
        if (state.depth == 0) return bit;  // the end of a string value
      } else if (c == '\\') {
        if (bit + 1 < valid) {
          mask &= ~(uint64_t{1} << (bit + 1));
        } else {
          state.skip_first = true;
        }
      }
      continue;
    }
    if (c == '"') {
      state.in_string = true;
    } else if (c == '{' || c == '[') {
      ++state.depth;
    } else if (c == '}' || c == ']') {
      if (--state.depth == 0) return bit;
    }
  }
  return std::nullopt;
}

}  // namespace

ScanBuffer ScanBuffer::make(size_t capacity) {
  ScanBuffer buffer{std::make_unique_for_overwrite<char[]>(capacity + TraceEventScanner::kPadding), capacity};
  std::memset(buffer.bytes.get() + capacity, 0, TraceEventScanner::kPadding);
  return buffer;
}

TraceEventScanner::TraceEventScanner(ByteStream& input, size_t chunk_size) : input_(input) {
  std::string_view whole = input_.take_mapped();
  static_assert(MappedFile::kPadding >= kPadding);
  if (whole.empty()) {
    buffer_ = ScanBuffer::make(chunk_size);
    data_ = buffer_.bytes.get();
    return;
  }
  // Read in place: one "buffer" holding the whole input, never refilled.
  mapped_ = true;
  data_ = whole.data();
  buffer_.capacity = end_ = whole.size();
  input_ended_ = true;
}

TraceEventScanner::Piece TraceEventScanner::next() {
  piece_begin_ = pos_;  // the previous piece is no longer needed
  // With a buffer exchange, pieces outlive this call: their reader drops
  // the mapped pages instead (TraceEventPipeline).
  if (mapped_ && exchange_ == nullptr) input_.release_mapped_before(data_ + piece_begin_);
  pre_read_ = false;
  switch (state_) {
    case State::kStart: return start();
    case State::kObjectMember: return object_member();
    case State::kObjectNext: return object_next();
    case State::kEventFirst: return event_first();
    case State::kEventNext: return event_next();
    case State::kDone: return Piece::kEnd;
  }
  return Piece::kEnd;
}

// --- the grammar -----------------------------------------------------------

TraceEventScanner::Piece TraceEventScanner::start() {
  int c = peek_non_space();
  while (c == 0xEF && end_ - pos_ < 3 && refill()) {
  }
  if (c == 0xEF && end_ - pos_ >= 3 && std::memcmp(data_ + pos_, "\xEF\xBB\xBF", 3) == 0) {
    pos_ += 3;  // a UTF-8 byte order mark
    c = peek_non_space();
  }
  if (c == '[') {
    ++pos_;
    top_is_array_ = true;
    state_ = State::kEventFirst;
    return event_first();
  }
  if (c == '{') {
    ++pos_;
    state_ = State::kObjectMember;
    return object_member();
  }
  if (c < 0) throw InputError(fmt::format("{}: the input is empty", input_.name()));
  throw InputError(fmt::format("{}: the trace is neither a JSON array of events nor an object with \"traceEvents\"",
                               input_.name()));
}

TraceEventScanner::Piece TraceEventScanner::object_member() {
  int c = peek_non_space();
  if (c == '}' && !saw_member_) {
    ++pos_;
    return finish_object();
  }
  if (c < 0) fail_truncated();
  if (c != '"') fail_here("expected a string key in the trace object");
  saw_member_ = true;
  key_ = read_key();
  if (peek_non_space() != ':') fail_here("expected ':' after a key");
  ++pos_;
  c = peek_non_space();
  piece_begin_ = pos_;
  if (key_ == "traceEvents") {
    if (c != '[') throw InputError(fmt::format("{}: \"traceEvents\" is not an array", input_.name()));
    ++pos_;
    saw_events_ = true;
    state_ = State::kEventFirst;
    return event_first();
  }
  if (c < 0) fail_truncated();
  if (c == '{' || c == '[') {
    scan_balanced(false);
  } else if (c == '"') {
    ++pos_;
    scan_balanced(true);
  } else {
    scan_scalar();
  }
  piece_end_ = pos_;
  state_ = State::kObjectNext;
  return Piece::kHeaderField;
}

TraceEventScanner::Piece TraceEventScanner::object_next() {
  int c = peek_non_space();
  if (c == ',') {
    ++pos_;
    state_ = State::kObjectMember;
    return object_member();
  }
  if (c == '}') {
    ++pos_;
    return finish_object();
  }
  if (c < 0) fail_truncated();
  fail_here("expected ',' or '}' in the trace object");
}

TraceEventScanner::Piece TraceEventScanner::finish_object() {
  if (!saw_events_) throw InputError(fmt::format("{}: the trace object has no \"traceEvents\" array", input_.name()));
  check_trailing();
  return Piece::kEnd;
}

TraceEventScanner::Piece TraceEventScanner::event_first() {
  if (peek_non_space() == ']') {
    ++pos_;
    return finish_events();
  }
  return read_event();
}

TraceEventScanner::Piece TraceEventScanner::event_next() {
  int c = peek_non_space();
  if (c == ',') {
    ++pos_;
    return read_event();
  }
  if (c == ']') {
    ++pos_;
    return finish_events();
  }
  if (c < 0) fail_truncated();
  fail_here(fmt::format("expected ',' or ']' after event #{}", event_index_));
}

TraceEventScanner::Piece TraceEventScanner::read_event() {
  int c = peek_non_space();
  if (c < 0) fail_truncated();
  size_t index = events_total_;
  if (c != '{') {
    bool is_value = c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n';
    if (!is_value) fail_here(fmt::format("expected event #{}", index));
    throw InputError(fmt::format("{}: event #{}: is not a JSON object", input_.name(), index));
  }
  piece_begin_ = pos_;
  if (mapped_) prefetch_ahead();
  size_t length = pre_reader_ != nullptr ? pre_reader_->pre_read(data_ + pos_, end_ - pos_) : 0;
  pre_read_ = length > 0;
  if (pre_read_) {
    pos_ += length;
  } else {
    scan_balanced(false);
  }
  piece_end_ = pos_;
  event_index_ = index;
  ++events_total_;
  state_ = State::kEventNext;
  return Piece::kEvent;
}

TraceEventScanner::Piece TraceEventScanner::finish_events() {
  if (!top_is_array_) {
    state_ = State::kObjectNext;
    return object_next();
  }
  check_trailing();
  return Piece::kEnd;
}

void TraceEventScanner::check_trailing() {
  state_ = State::kDone;
  if (peek_non_space() >= 0) {
    throw InputError(fmt::format("{}: unexpected content after the trace at byte {}", input_.name(),
                                 buffer_offset_ + pos_));
  }
}

std::string TraceEventScanner::read_key() {
  piece_begin_ = pos_;
  ++pos_;
  scan_balanced(true);
  std::string_view body(data_ + piece_begin_ + 1, pos_ - piece_begin_ - 2);
  if (body.find('\\') == std::string_view::npos) return std::string(body);
  std::string decoded;
  if (!decode_json_string(body, decoded)) fail_at(buffer_offset_ + piece_begin_, "invalid string key");
  return decoded;
}

// --- the cursor ------------------------------------------------------------

// A mapped input comes from memory, not from a buffer a read() has just
// filled (and left in the cache): each line is asked for a few events ahead.
void TraceEventScanner::prefetch_ahead() {
  constexpr size_t kAhead = 1024;
  constexpr size_t kLine = 64;
  size_t until = std::min(pos_ + kAhead, end_);
  for (; prefetched_ < until; prefetched_ += kLine) __builtin_prefetch(data_ + prefetched_);
}

int TraceEventScanner::peek_non_space() {
  for (;;) {
    while (pos_ < end_ && is_space(data_[pos_])) ++pos_;
    if (pos_ < end_) return static_cast<unsigned char>(data_[pos_]);
    piece_begin_ = pos_;  // callers mark a piece only after peeking
    if (!refill()) return -1;
  }
}

bool TraceEventScanner::refill() {
  if (input_ended_) return false;
  if (end_ == buffer_.capacity) make_room();
  size_t got = fill();
  if (got == 0) {
    input_ended_ = true;
    return false;
  }
  end_ += got;
  return true;
}

// Reads into the free end of the buffer. With a buffer exchange, pieces
// handed out earlier lie in this buffer and their readers look up to
// kPadding bytes past their end, maybe on another thread: the buffer is
// filled whole (or to the end of the input) at once, so nothing is written
// into it after a piece in it is handed out.
// An input error met after some bytes of a fill waits for the next fill, so
// those bytes are scanned first, as a single read would have returned them.
size_t TraceEventScanner::fill() {
  if (deferred_error_) std::rethrow_exception(std::exchange(deferred_error_, nullptr));
  char* free = buffer_.bytes.get() + end_;
  size_t room = buffer_.capacity - end_;
  size_t total = input_.read(free, room);
  if (exchange_ == nullptr) return total;
  try {
    for (size_t got = total; got > 0 && total < room; total += got) got = input_.read(free + total, room - total);
  } catch (const InputError&) {
    if (total == 0) throw;
    deferred_error_ = std::current_exception();
  }
  return total;
}

// Drops what lies before the piece being read; grows the buffer when that
// frees less than half of it (a piece larger than a chunk), so a huge piece
// is not moved again and again. With a buffer exchange the piece moves to a
// fresh buffer and the old one, holding the pieces handed out, is given back.
void TraceEventScanner::make_room() {
  size_t keep_from = std::min(piece_begin_, pos_);
  size_t kept = end_ - keep_from;
  size_t capacity = kept > buffer_.capacity / 2 ? buffer_.capacity * 2 : buffer_.capacity;
  if (exchange_ != nullptr) {
    ScanBuffer fresh = exchange_->acquire(capacity);
    std::memcpy(fresh.bytes.get(), buffer_.bytes.get() + keep_from, kept);
    exchange_->release(std::exchange(buffer_, std::move(fresh)));
  } else if (capacity > buffer_.capacity) {
    ScanBuffer bigger = ScanBuffer::make(capacity);
    std::memcpy(bigger.bytes.get(), buffer_.bytes.get() + keep_from, kept);
    buffer_ = std::move(bigger);
  } else {
    std::memmove(buffer_.bytes.get(), buffer_.bytes.get() + keep_from, kept);
  }
  data_ = buffer_.bytes.get();
  buffer_offset_ += keep_from;
  end_ = kept;
  pos_ -= keep_from;
  piece_begin_ -= keep_from;
}

// Advances pos_ past the end of a value: with `in_string`, pos_ is just
// after an opening quote and the string's closing quote ends it; otherwise
// pos_ is at '{' or '[' and the matching close ends it. Brackets of the
// wrong kind are left for the parser to find.
void TraceEventScanner::scan_balanced(bool in_string) {
  BalanceState state{0, in_string, false, in_string};
  for (;;) {
    if (pos_ >= end_ && !refill()) fail_truncated();
    const char* data = data_;
    for (size_t block = pos_; block < end_; block += 64) {
      size_t valid = std::min<size_t>(64, end_ - block);
      BlockBits bits = classify_block(data + block);
      if (valid < 64) {
        uint64_t keep = (uint64_t{1} << valid) - 1;
        bits.quote &= keep;
        bits.backslash &= keep;
        bits.open &= keep;
        bits.close &= keep;
      }
      std::optional<size_t> end = (bits.backslash == 0 && !state.skip_first && !state.ends_with_string)
                                      ? balance_block(bits, state)
                                      : balance_block_escaped(data + block, bits, valid, state);
      if (end) {
        pos_ = block + *end + 1;
        return;
      }
    }
    pos_ = end_;
  }
}

void TraceEventScanner::scan_scalar() {
  for (;;) {
    while (pos_ < end_) {
      char c = data_[pos_];
      if (c == ',' || c == '}' || c == ']' || is_space(c)) return;
      ++pos_;
    }
    if (!refill()) return;
  }
}

// --- errors ----------------------------------------------------------------

void TraceEventScanner::fail_at(uint64_t offset, std::string_view what) const {
  throw InputError(fmt::format("{}: invalid JSON at byte {}: {}", input_.name(), offset, what));
}

void TraceEventScanner::fail_here(std::string_view what) const { fail_at(buffer_offset_ + pos_, what); }

void TraceEventScanner::fail_truncated() const {
  std::string where;
  if (state_ == State::kEventFirst || state_ == State::kEventNext) where = fmt::format(" (in event #{})", events_total_);
  throw InputError(fmt::format("{}: invalid JSON at byte {} (end of input; truncated?){}", input_.name(),
                               buffer_offset_ + end_, where));
}

}  // namespace stepscope
