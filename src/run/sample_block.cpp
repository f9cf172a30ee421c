#include "run/sample_block.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "run/column_block.hpp"

namespace stepscope {

namespace {

constexpr unsigned kGilBit = 4;  // beside the state's values 0-3
// The least and the most a sample's five values take (4 varints of 1 to 10 bytes, and a byte).
constexpr size_t kMinBytesPerSample = 5, kMaxBytesPerSample = 41;

}  // namespace

// The five columns, one after the other: time, pid, tid, stack, state and GIL.
std::string encode_sample_block(std::span<const Sample> samples) {
  ColumnWriter columns(samples.size() * 8);
  columns.deltas(samples, [](const Sample& s) { return as_unsigned(s.ts_ns); });
  columns.deltas(samples, [](const Sample& s) { return as_unsigned(s.pid); });
  // A process's threads have ids near its own (its main thread the same).
  for (const Sample& s : samples) columns.varint(zigzag(as_unsigned(s.tid) - as_unsigned(s.pid)));
  columns.deltas(samples, [](const Sample& s) { return uint64_t{s.stack}; });
  for (const Sample& s : samples) columns.byte(static_cast<uint8_t>(s.state) | (s.holds_gil ? kGilBit : 0));
  return columns.compressed();
}

namespace {

// Fills `samples` from the columns; an empty string, or what is wrong.
std::string take_columns(ColumnReader& columns, size_t stacks, std::span<Sample> samples) {
  columns.deltas(samples, [](Sample& s, uint64_t ts) { s.ts_ns = static_cast<int64_t>(ts); });
  // Process and thread ids fit 32 bits (Sample); the columns hold 64.
  bool out_of_range = false;
  auto id = [&](uint64_t value) {
    auto wide = static_cast<int64_t>(value);
    out_of_range |= !fits_sample_id(wide);
    return static_cast<int32_t>(wide);
  };
  columns.deltas(samples, [&](Sample& s, uint64_t pid) { s.pid = id(pid); });
  for (Sample& s : samples) s.tid = id(as_unsigned(s.pid) + unzigzag(columns.varint()));
  if (out_of_range) return "a process or thread id out of range";
  IdRefs refs(stacks, "stack");
  columns.deltas(samples, [&](Sample& s, uint64_t stack) { s.stack = refs.take(stack); });
  if (std::string error = refs.error(); !error.empty()) return error;
  if (columns.failed() || columns.remaining() != samples.size()) return "samples do not fill the block";
  for (Sample& s : samples) {
    uint8_t flags = columns.byte();
    unsigned state = flags & ~kGilBit;
    if (state > static_cast<uint8_t>(ThreadState::kDiskWait)) return fmt::format("unknown thread state {}", state);
    s.state = static_cast<ThreadState>(state);
    s.holds_gil = (flags & kGilBit) != 0;
  }
  return {};
}

}  // namespace

std::string decode_sample_block(std::string_view data, size_t count, size_t stacks, std::vector<Sample>& out) {
  return decode_rows(data, count, kMinBytesPerSample, kMaxBytesPerSample, "samples", out,
                     [stacks](ColumnReader& columns, std::span<Sample> samples) {
                       return take_columns(columns, stacks, samples);
                     });
}

}  // namespace stepscope
