#include "collectors/python/line_table.hpp"

#include <algorithm>
#include <climits>

namespace stepscope::python {

namespace {

// Reading the 3.11+ location table's varints with bounds checks: CPython
// trusts its own bytes, we do not trust another process's.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size(); }
  uint8_t peek() const { return static_cast<uint8_t>(bytes_[pos_]); }
  uint8_t next() { return done() ? 0 : static_cast<uint8_t>(bytes_[pos_++]); }

  // 6 bits per byte, least significant first; bit 6 says another byte follows.
  unsigned varint() {
    unsigned byte = next();
    unsigned value = byte & 63;
    unsigned shift = 0;
    while ((byte & 64) != 0 && !done() && shift < 24) {
      byte = next();
      shift += 6;
      value |= (byte & 63) << shift;
    }
    return value;
  }
  int signed_varint() {
    unsigned value = varint();
    return (value & 1) != 0 ? -static_cast<int>(value >> 1) : static_cast<int>(value >> 1);
  }
  // Skips to the start of the next entry (a byte with the top bit set).
  void skip_to_entry() {
    while (!done() && (peek() & 128) == 0) ++pos_;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// Location entry kinds (Objects/locations.md).
constexpr int kNoLocation = 15;
constexpr int kLongForm = 14;
constexpr int kNoColumns = 13;
constexpr int kOneLine0 = 10;  // 10, 11, 12: the line moves by 0, 1, 2

// Keeps line arithmetic on hostile tables from overflowing.
int add_clamped(int line, int delta) {
  long long sum = static_cast<long long>(line) + delta;
  return static_cast<int>(std::clamp<long long>(sum, INT_MIN + 1, INT_MAX));
}

}  // namespace

LineTable::LineTable(LineTableFormat format, std::string_view table, int first_line)
    : first_line_(first_line) {
  switch (format) {
    case LineTableFormat::kLnotab:
      decode_lnotab(table);
      break;
    case LineTableFormat::kLinetable310:
      decode_linetable_310(table);
      break;
    case LineTableFormat::kLocations311:
      decode_locations_311(table);
      break;
  }
}

// 3.8-3.9: pairs (unsigned byte increment, signed line increment). The line
// of an offset is the first line plus every line increment whose cumulative
// byte offset is at or before it; past the table the last line holds.
void LineTable::decode_lnotab(std::string_view table) {
  int offset = 0;
  int line = first_line_;
  ranges_.push_back({0, line});
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    offset += static_cast<uint8_t>(table[i]);
    line = add_clamped(line, static_cast<int8_t>(table[i + 1]));
    ranges_.push_back({offset, line});
  }
  end_ = INT_MAX;
}

// 3.10 (PEP 626): pairs (unsigned byte length, signed line delta); a delta of
// -128 marks a range without a line and leaves the running line unchanged.
void LineTable::decode_linetable_310(std::string_view table) {
  int offset = 0;
  int line = first_line_;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    int length = static_cast<uint8_t>(table[i]);
    int delta = static_cast<int8_t>(table[i + 1]);
    int range_line = -1;
    if (delta != -128) {
      line = add_clamped(line, delta);
      range_line = line;
    }
    if (length > 0) ranges_.push_back({offset, range_line});
    offset += length;
  }
  end_ = offset;
}

// 3.11+: entries of 1 + N bytes; the first byte is 1kkkkLLL with kind k and
// length L+1 code units (2 bytes each).
void LineTable::decode_locations_311(std::string_view table) {
  ByteReader reader(table);
  int offset = 0;
  int line = first_line_;
  while (!reader.done() && offset < INT_MAX / 2) {
    uint8_t head = reader.next();
    int kind = (head >> 3) & 15;
    int length = ((head & 7) + 1) * 2;
    int range_line = line;
    if (kind == kNoLocation) {
      range_line = -1;
    } else if (kind == kLongForm || kind == kNoColumns) {
      line = add_clamped(line, reader.signed_varint());
      range_line = line;
    } else if (kind >= kOneLine0) {
      line = add_clamped(line, kind - kOneLine0);
      range_line = line;
    }
    ranges_.push_back({offset, range_line});
    offset += length;
    reader.skip_to_entry();
  }
  end_ = offset;
}

int LineTable::line_at(int offset) const {
  if (offset < 0) return first_line_;  // a frame that has not started yet
  if (offset >= end_) return -1;
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), offset,
                                [](int value, const Range& range) { return value < range.start; });
  if (after == ranges_.begin()) return -1;
  return std::prev(after)->line;
}

}  // namespace stepscope::python
