// The encoding the run file's blocks share (docs/run-format.md, "Samples",
// "Counter values" and "Spans"): a block's rows column by column, each value a
// LEB128 varint (differences and signed values zigzagged) or raw bytes, the
// columns then deflated as one. Consecutive rows are nearly alike, so the
// differences are small and the whole compresses to a few bytes a row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace stepscope {

// Differences are taken in unsigned arithmetic (wrapping, never undefined)
// and zigzagged so that small negative ones stay small: 0, -1, 1, -2 ... ->
// 0, 1, 2, 3 ...
inline uint64_t zigzag(uint64_t delta) { return (delta << 1) ^ (0 - (delta >> 63)); }
inline uint64_t unzigzag(uint64_t value) { return (value >> 1) ^ (0 - (value & 1)); }
inline uint64_t as_unsigned(int64_t value) { return static_cast<uint64_t>(value); }

class ColumnWriter {
 public:
  explicit ColumnWriter(size_t expected_bytes) { raw_.reserve(expected_bytes); }

  void varint(uint64_t value) {
    while (value >= 0x80) {
      raw_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    raw_.push_back(static_cast<char>(value));
  }
  void signed_varint(int64_t value) { varint(zigzag(as_unsigned(value))); }
  void byte(uint8_t value) { raw_.push_back(static_cast<char>(value)); }
  // Eight bytes, least significant first.
  void word(uint64_t value) {
    for (int shift = 0; shift < 64; shift += 8) byte(static_cast<uint8_t>(value >> shift));
  }

  // A column of each row's `value` less the previous row's (the first's less 0).
  template <typename Row, typename Value>
  void deltas(std::span<const Row> rows, Value value) {
    uint64_t previous = 0;
    for (const Row& row : rows) {
      uint64_t current = value(row);
      varint(zigzag(current - previous));
      previous = current;
    }
  }

  // The block: the columns' size as a varint, then the columns deflated
  // (zlib format, what Python's zlib.decompress reads).
  std::string compressed() const;

 private:
  std::string raw_;
};

class ColumnReader {
 public:
  // The columns of `block`; nullopt, with `error`, when its header or its
  // compressed bytes are bad, or its columns take fewer than `min_bytes` or
  // more than `max_bytes` (bounds the caller knows from its row count, which
  // keep a corrupt header from asking for gigabytes). `rows` names them in
  // the error.
  static std::optional<ColumnReader> open(std::string_view block, size_t min_bytes, size_t max_bytes,
                                          std::string_view rows, std::string& error);

  // 0, and failed() from then on, when it runs past the end or 64 bits.
  // Inline, with a path for the one-byte values most differences are: a
  // call per value was a tenth of reading an hour's run.
  uint64_t varint() {
    if (at_ < raw_.size() && !(static_cast<uint8_t>(raw_[at_]) & 0x80)) return static_cast<uint8_t>(raw_[at_++]);
    return long_varint();
  }
  int64_t signed_varint() { return static_cast<int64_t>(unzigzag(varint())); }
  uint8_t byte() {
    if (at_ >= raw_.size()) {
      failed_ = true;
      return 0;
    }
    return static_cast<uint8_t>(raw_[at_++]);
  }
  // Eight bytes, least significant first.
  uint64_t word() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 8) value |= uint64_t{byte()} << shift;
    return value;
  }

  // Gives each row its value from a column of differences (deltas above).
  template <typename Row, typename Assign>
  void deltas(std::span<Row> rows, Assign assign) {
    uint64_t previous = 0;
    for (Row& row : rows) assign(row, previous += unzigzag(varint()));
  }

  bool failed() const { return failed_; }
  size_t remaining() const { return raw_.size() - at_; }

 private:
  explicit ColumnReader(std::string raw) : raw_(std::move(raw)) {}
  uint64_t long_varint();
  std::string raw_;
  size_t at_ = 0;
  bool failed_ = false;
};

// Ids a column refers to (stacks, counter tracks, strings), each checked
// against how many there are: decoding goes on past a bad one, and error()
// names the first.
class IdRefs {
 public:
  IdRefs(size_t count, const char* noun) : count_(count), noun_(noun) {}
  uint32_t take(uint64_t id) {
    if (id >= count_ && !any_bad_) {
      any_bad_ = true;
      bad_ = id;
    }
    return static_cast<uint32_t>(id);
  }
  // Empty when every id exists.
  std::string error() const {
    if (!any_bad_) return {};
    if (bad_ > UINT32_MAX) return fmt::format("a {} id out of range", noun_);
    return fmt::format("{} {} does not exist", noun_, bad_);
  }

 private:
  size_t count_;
  const char* noun_;
  bool any_bad_ = false;
  uint64_t bad_ = 0;
};

// Appends the `count` rows of `block` to `out`, each of its columns taking
// `min_bytes` to `max_bytes` a row: `take` fills them from the columns and
// says what is wrong with them, if anything. On any error `out` is left as
// it was, and the error says what is wrong (`rows` names them).
template <typename Row, typename Take>
std::string decode_rows(std::string_view block, size_t count, size_t min_bytes, size_t max_bytes,
                        std::string_view rows, std::vector<Row>& out, Take take) {
  std::string error;
  std::optional<ColumnReader> columns = ColumnReader::open(block, count * min_bytes, count * max_bytes, rows, error);
  if (!columns) return error;
  const size_t first = out.size();
  out.resize(first + count);
  error = take(*columns, std::span<Row>(out.data() + first, count));
  if (!error.empty()) out.resize(first);
  return error;
}

}  // namespace stepscope
