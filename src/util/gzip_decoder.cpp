#include "util/gzip_decoder.hpp"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <climits>
#include <utility>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr size_t kInputBufferSize = size_t{1} << 20;

const char* inflate_error_text(int status) {
  switch (status) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid back-reference distance";
    case ISAL_INVALID_WRAPPER: return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect checksum or length in the member's trailer";
    case ISAL_NEED_DICT: return "a preset dictionary is needed";
    default: return "inflate error";
  }
}

}  // namespace

GzipDecoder::GzipDecoder(std::string source_name)
    : source_name_(std::move(source_name)), input_(kInputBufferSize), state_(std::make_unique<inflate_state>()) {
  isal_inflate_init(state_.get());
  state_->crc_flag = ISAL_GZIP;  // parse each member's header, check its trailer
}

GzipDecoder::~GzipDecoder() = default;

size_t GzipDecoder::read(char* destination, size_t count, const Fill& fill) {
  if (pending_error_) std::rethrow_exception(std::exchange(pending_error_, nullptr));
  size_t produced = 0;
  try {
    inflate_into(destination, count, fill, produced);
  } catch (const InputError&) {
    // What was inflated before the corruption comes first, whatever the
    // caller's read sizes: the error follows at the next read.
    if (produced == 0) throw;
    pending_error_ = std::current_exception();
  }
  return produced;
}

void GzipDecoder::inflate_into(char* destination, size_t count, const Fill& fill, size_t& produced) {
  inflate_state& state = *state_;
  while (produced < count && !finished_) {
    if (state.avail_in == 0 && !input_ended_ && !refill(fill)) input_ended_ = true;
    if (input_ended_ && !in_member_) {
      finished_ = true;
      break;
    }
    if (!in_member_) start_member();
    size_t out_chunk = std::min<size_t>(count - produced, UINT_MAX);
    state.next_out = reinterpret_cast<uint8_t*>(destination + produced);
    state.avail_out = static_cast<uint32_t>(out_chunk);
    uint32_t in_before = state.avail_in;
    int status = isal_inflate(&state);
    consumed_ += in_before - state.avail_in;
    size_t out = out_chunk - state.avail_out;
    produced += out;
    if (status < 0 || status == ISAL_NEED_DICT) {
      fail(fmt::format("{} (near compressed byte {})", inflate_error_text(status), consumed_));
    }
    if (state.block_state == ISAL_BLOCK_FINISH) {
      // ISA-L gives back what it read past the trailer: the next member.
      in_member_ = false;
      isal_inflate_reset(&state);
    } else if (input_ended_ && out == 0) {
      fail("the data is truncated");
    }
  }
}

bool GzipDecoder::refill(const Fill& fill) {
  size_t got = fill(input_.data(), input_.size());
  state_->next_in = reinterpret_cast<uint8_t*>(input_.data());
  state_->avail_in = static_cast<uint32_t>(got);
  return got > 0;
}

// A member after the first must start with the magic too; anything else
// after a complete member is garbage, not silently ignored.
void GzipDecoder::start_member() {
  const inflate_state& state = *state_;
  bool magic = (state.avail_in < 1 || state.next_in[0] == 0x1f) && (state.avail_in < 2 || state.next_in[1] == 0x8b);
  if (!magic) fail(fmt::format("unexpected bytes after gzip member at byte {}", consumed_));
  in_member_ = true;
}

void GzipDecoder::fail(const std::string& why) const {
  throw InputError(fmt::format("{}: corrupt gzip data: {}", source_name_, why));
}

}  // namespace stepscope
