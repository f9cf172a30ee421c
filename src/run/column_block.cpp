#include "run/column_block.hpp"

#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include <memory>

namespace stepscope {

namespace {

// Fast enough for a recorder's commit (a second of 32 threads at 100 Hz
// deflates in well under a millisecond) and within a few percent of level 9.
constexpr int kDeflateLevel = 6;

// Blocks are written by zlib and read by ISA-L, which inflates the same
// zlib streams (header and Adler-32 checked) in 0.6x zlib's time: a large
// share of reading a run (bench/README.md, "Reading runs faster").
bool inflate_exactly(std::string_view compressed, std::string& raw) {
  if (compressed.size() > UINT32_MAX || raw.size() > UINT32_MAX) return false;
  std::unique_ptr<inflate_state> state(new inflate_state);  // 87 kB that isal_inflate_init sets up: not zeroed
  isal_inflate_init(state.get());
  state->crc_flag = ISAL_ZLIB;
  state->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(compressed.data()));
  state->avail_in = static_cast<uint32_t>(compressed.size());
  state->next_out = reinterpret_cast<uint8_t*>(raw.data());
  state->avail_out = static_cast<uint32_t>(raw.size());
  // Exactly raw.size() bytes and the stream's end: a stream that ends short,
  // runs over, or whose checksum differs is corrupt.
  return isal_inflate(state.get()) == ISAL_DECOMP_OK && state->block_state == ISAL_BLOCK_FINISH &&
         state->avail_out == 0;
}

}  // namespace

std::string ColumnWriter::compressed() const {
  ColumnWriter header(10);
  header.varint(raw_.size());
  std::string block = header.raw_;
  size_t header_size = block.size();
  uLongf bound = compressBound(static_cast<uLong>(raw_.size()));
  block.resize(header_size + bound);
  compress2(reinterpret_cast<Bytef*>(block.data() + header_size), &bound, reinterpret_cast<const Bytef*>(raw_.data()),
            static_cast<uLong>(raw_.size()), kDeflateLevel);
  block.resize(header_size + bound);
  return block;
}

std::optional<ColumnReader> ColumnReader::open(std::string_view block, size_t min_bytes, size_t max_bytes,
                                               std::string_view rows, std::string& error) {
  ColumnReader header{std::string(block.substr(0, 10))};
  uint64_t raw_size = header.varint();
  if (header.failed() || raw_size < min_bytes || raw_size > max_bytes) {
    error = "bad block header";
    return std::nullopt;
  }
  std::string raw(raw_size, '\0');
  if (!inflate_exactly(block.substr(header.at_), raw)) {
    error = "corrupt compressed " + std::string(rows);
    return std::nullopt;
  }
  return ColumnReader(std::move(raw));
}

uint64_t ColumnReader::long_varint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at_ >= raw_.size()) break;
    auto next = static_cast<uint8_t>(raw_[at_++]);
    value |= static_cast<uint64_t>(next & 0x7f) << shift;
    if (!(next & 0x80)) return value;
  }
  failed_ = true;
  return 0;
}

}  // namespace stepscope
