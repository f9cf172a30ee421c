#include "util/gzip_decoder.hpp"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr size_t kInputBufferSize = size_t{1} << 20;

// ISA-L first inflates into its own buffer, then copies what fits into the
// output and, on a corruption, drops the rest. Given at least this much room
// at every call, it drops nothing, so what comes out before a corruption is
// the same whatever the reads' sizes (one thread or two, any chunk size).
constexpr size_t kSmallestWindow = sizeof(inflate_state::tmp_out_buffer);

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
    : source_name_(std::move(source_name)),
      input_(kInputBufferSize),
      buffered_(kSmallestWindow),
      state_(std::make_unique<inflate_state>()) {
  isal_inflate_init(state_.get());
  state_->crc_flag = ISAL_GZIP;  // parse each member's header, check its trailer
}

GzipDecoder::~GzipDecoder() = default;

size_t GzipDecoder::read(char* destination, size_t count, const Fill& fill) {
  size_t produced = take_buffered(destination, count);
  try {
    while (produced < count && !finished_ && !error_) {
      // Straight into `destination` where it has room for a whole window,
      // else into buffered_ and copied.
      size_t room = std::min<size_t>(count - produced, UINT32_MAX);
      bool direct = room >= kSmallestWindow;
      char* window = direct ? destination + produced : buffered_.data();
      size_t out = inflate_window(window, direct ? room : buffered_.size(), fill);
      if (direct) {
        produced += out;
      } else {
        buffered_begin_ = 0;
        buffered_end_ = out;
        produced += take_buffered(destination + produced, count - produced);
      }
    }
  } catch (const InputError&) {
    error_ = std::current_exception();
  }
  // What was inflated before a corruption comes first; the error then
  // follows at every read.
  if (produced == 0 && error_) std::rethrow_exception(error_);
  return produced;
}

size_t GzipDecoder::take_buffered(char* destination, size_t count) {
  size_t n = std::min(count, buffered_end_ - buffered_begin_);
  std::memcpy(destination, buffered_.data() + buffered_begin_, n);
  buffered_begin_ += n;
  return n;
}

// Inflates into the `size` bytes at `window` until some come out or the
// data ends. A corruption found after some bytes came out is kept in error_
// for the reads after them; before any, it is thrown.
size_t GzipDecoder::inflate_window(char* window, size_t size, const Fill& fill) {
  inflate_state& state = *state_;
  while (!finished_) {
    if (state.avail_in == 0 && !input_ended_ && !refill(fill)) input_ended_ = true;
    if (input_ended_ && !in_member_) {
      finished_ = true;
      break;
    }
    if (!in_member_) start_member();
    state.next_out = reinterpret_cast<uint8_t*>(window);
    state.avail_out = static_cast<uint32_t>(size);
    uint32_t in_before = state.avail_in;
    int status = isal_inflate(&state);
    consumed_ += in_before - state.avail_in;
    size_t out = size - state.avail_out;
    if (status < 0 || status == ISAL_NEED_DICT) {
      InputError error = corruption(fmt::format("{} (near compressed byte {})", inflate_error_text(status), consumed_));
      if (out == 0) throw error;
      error_ = std::make_exception_ptr(error);
      return out;
    }
    if (state.block_state == ISAL_BLOCK_FINISH) {
      // ISA-L gives back what it read past the trailer: the next member.
      in_member_ = false;
      isal_inflate_reset(&state);
    } else if (input_ended_ && out == 0) {
      throw corruption("the data is truncated");
    }
    if (out > 0) return out;
  }
  return 0;
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
  if (!magic) throw corruption(fmt::format("unexpected bytes after gzip member at byte {}", consumed_));
  in_member_ = true;
}

InputError GzipDecoder::corruption(const std::string& why) const {
  return InputError(fmt::format("{}: corrupt gzip data: {}", source_name_, why));
}

}  // namespace stepscope
