#include "run/counter_block.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "run/column_block.hpp"

namespace stepscope {

namespace {

// The least and the most a value's columns take (2 varints of 1 to 10 bytes, and 8 bytes).
constexpr size_t kMinBytesPerValue = 10, kMaxBytesPerValue = 28;

// A value is kept as its bits XORed with those of its track's previous value
// in the block (Gorilla's idea): equal values become zeros and near ones
// share their sign, exponent and high mantissa bits, which deflate then
// takes to a few bits.
class PreviousBits {
 public:
  explicit PreviousBits(size_t tracks) : bits_(tracks, 0) {}
  uint64_t encode(CounterTrackId track, uint64_t bits) { return bits ^ std::exchange(bits_[track], bits); }
  uint64_t decode(CounterTrackId track, uint64_t encoded) { return bits_[track] ^= encoded; }

 private:
  std::vector<uint64_t> bits_;
};

}  // namespace

// Three columns: track, time, value.
std::string encode_counter_block(std::span<const CounterValue> values) {
  ColumnWriter columns(values.size() * 12);
  columns.deltas(values, [](const CounterValue& v) { return uint64_t{v.track}; });
  columns.deltas(values, [](const CounterValue& v) { return as_unsigned(v.ts_ns); });
  CounterTrackId most = 0;
  for (const CounterValue& v : values) most = std::max(most, v.track);
  PreviousBits previous(values.empty() ? 0 : size_t{most} + 1);
  for (const CounterValue& v : values) {
    columns.word(previous.encode(v.track, std::bit_cast<uint64_t>(v.value)));
  }
  return columns.compressed();
}

namespace {

// Fills `values` from the columns; an empty string, or what is wrong.
std::string take_columns(ColumnReader& columns, size_t tracks, std::span<CounterValue> values) {
  IdRefs refs(tracks, "counter track");
  columns.deltas(values, [&](CounterValue& v, uint64_t track) { v.track = refs.take(track); });
  columns.deltas(values, [](CounterValue& v, uint64_t ts) { v.ts_ns = static_cast<int64_t>(ts); });
  if (std::string error = refs.error(); !error.empty()) return error;
  if (columns.failed() || columns.remaining() != values.size() * sizeof(uint64_t)) {
    return "counter values do not fill the block";
  }
  PreviousBits previous(tracks);
  for (CounterValue& v : values) v.value = std::bit_cast<double>(previous.decode(v.track, columns.word()));
  return {};
}

}  // namespace

std::string decode_counter_block(std::string_view data, size_t count, size_t tracks, std::vector<CounterValue>& out) {
  return decode_rows(data, count, kMinBytesPerValue, kMaxBytesPerValue, "counter values", out,
                     [tracks](ColumnReader& columns, std::span<CounterValue> values) {
                       return take_columns(columns, tracks, values);
                     });
}

}  // namespace stepscope
