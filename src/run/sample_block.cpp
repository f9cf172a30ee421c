#include "run/sample_block.hpp"

#include <zlib.h>

#include <fmt/format.h>

namespace stepscope {

namespace {

// Differences are taken in unsigned arithmetic (wrapping, never undefined)
// and zigzagged so that small negative ones stay small: 0, -1, 1, -2 ... ->
// 0, 1, 2, 3 ...
uint64_t zigzag(uint64_t delta) { return (delta << 1) ^ (0 - (delta >> 63)); }
uint64_t unzigzag(uint64_t value) { return (value >> 1) ^ (0 - (value & 1)); }
uint64_t as_unsigned(int64_t value) { return static_cast<uint64_t>(value); }

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Reads LEB128 varints from a byte string; `failed` once one runs past the end or past 64 bits.
class VarintReader {
 public:
  explicit VarintReader(std::string_view bytes) : bytes_(bytes) {}
  uint64_t next() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) break;
      auto byte = static_cast<uint8_t>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    failed_ = true;
    return 0;
  }
  bool failed() const { return failed_; }
  bool at_end() const { return at_ == bytes_.size(); }
  size_t offset() const { return at_; }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
  bool failed_ = false;
};

constexpr unsigned kGilBit = 4;  // beside the state's values 0-3
// The least and the most a sample's five varints take (4 of 1 to 10 bytes, and 1).
constexpr size_t kMinBytesPerSample = 5, kMaxBytesPerSample = 41;
// Fast enough for a recorder's commit (a second of 32 threads at 100 Hz
// deflates in well under a millisecond) and within a few percent of level 9.
constexpr int kDeflateLevel = 6;

// Each sample's value as its difference from the previous one's (the first's from 0).
template <typename Value>
void put_deltas(std::string& raw, std::span<const Sample> samples, Value value) {
  uint64_t previous = 0;
  for (const Sample& s : samples) {
    uint64_t current = value(s);
    put_varint(raw, zigzag(current - previous));
    previous = current;
  }
}

template <typename Assign>
void take_deltas(VarintReader& columns, std::span<Sample> samples, Assign assign) {
  uint64_t previous = 0;
  for (Sample& s : samples) assign(s, previous += unzigzag(columns.next()));
}

// The five columns, one after the other: time, pid, tid, stack, state and GIL.
std::string columns_of(std::span<const Sample> samples) {
  std::string raw;
  raw.reserve(samples.size() * 8);
  put_deltas(raw, samples, [](const Sample& s) { return as_unsigned(s.ts_ns); });
  put_deltas(raw, samples, [](const Sample& s) { return as_unsigned(s.pid); });
  // A process's threads have ids near its own (its main thread the same).
  for (const Sample& s : samples) put_varint(raw, zigzag(as_unsigned(s.tid) - as_unsigned(s.pid)));
  put_deltas(raw, samples, [](const Sample& s) { return uint64_t{s.stack}; });
  for (const Sample& s : samples) {
    raw.push_back(static_cast<char>(static_cast<uint8_t>(s.state) | (s.holds_gil ? kGilBit : 0)));
  }
  return raw;
}

// Fills `samples` from the columns; an empty string, or what is wrong.
std::string take_columns(std::string_view raw, std::span<Sample> samples) {
  VarintReader columns(raw);
  take_deltas(columns, samples, [](Sample& s, uint64_t ts) { s.ts_ns = static_cast<int64_t>(ts); });
  take_deltas(columns, samples, [](Sample& s, uint64_t pid) { s.pid = static_cast<int64_t>(pid); });
  for (Sample& s : samples) s.tid = static_cast<int64_t>(as_unsigned(s.pid) + unzigzag(columns.next()));
  bool stack_too_large = false;
  take_deltas(columns, samples, [&](Sample& s, uint64_t stack) {
    stack_too_large |= stack > UINT32_MAX;
    s.stack = static_cast<StackId>(stack);
  });
  if (stack_too_large) return "a stack id out of range";
  size_t flags_at = columns.offset();
  if (columns.failed() || raw.size() - flags_at != samples.size()) return "samples do not fill the block";
  for (size_t i = 0; i < samples.size(); ++i) {
    auto flags = static_cast<uint8_t>(raw[flags_at + i]);
    unsigned state = flags & ~kGilBit;
    if (state > static_cast<uint8_t>(ThreadState::kDiskWait)) return fmt::format("unknown thread state {}", state);
    samples[i].state = static_cast<ThreadState>(state);
    samples[i].holds_gil = (flags & kGilBit) != 0;
  }
  return {};
}

bool inflate_exactly(std::string_view compressed, std::string& raw) {
  auto size = static_cast<uLongf>(raw.size());
  int rc = uncompress(reinterpret_cast<Bytef*>(raw.data()), &size,
                      reinterpret_cast<const Bytef*>(compressed.data()), static_cast<uLong>(compressed.size()));
  return rc == Z_OK && size == raw.size();
}

}  // namespace

// A block: the raw columns' size as a varint, then the columns deflated (zlib format).
std::string encode_sample_block(std::span<const Sample> samples) {
  std::string raw = columns_of(samples);
  std::string block;
  put_varint(block, raw.size());
  size_t header = block.size();
  uLongf bound = compressBound(static_cast<uLong>(raw.size()));
  block.resize(header + bound);
  compress2(reinterpret_cast<Bytef*>(block.data() + header), &bound, reinterpret_cast<const Bytef*>(raw.data()),
            static_cast<uLong>(raw.size()), kDeflateLevel);
  block.resize(header + bound);
  return block;
}

std::string decode_sample_block(std::string_view data, size_t count, std::vector<Sample>& out) {
  VarintReader header(data);
  uint64_t raw_size = header.next();
  if (header.failed() || raw_size < count * kMinBytesPerSample || raw_size > count * kMaxBytesPerSample) {
    return "bad block header";
  }
  std::string raw(raw_size, '\0');
  if (!inflate_exactly(data.substr(header.offset()), raw)) return "corrupt compressed samples";
  const size_t first = out.size();
  out.resize(first + count);
  std::string error = take_columns(raw, std::span<Sample>(out.data() + first, count));
  if (!error.empty()) out.resize(first);
  return error;
}

}  // namespace stepscope
