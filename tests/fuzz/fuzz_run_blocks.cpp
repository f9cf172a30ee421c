// libFuzzer target for the blocks a run file keeps its samples, counter
// values, spans, frames and stacks in (run/sample_block.hpp,
// run/counter_block.hpp, run/span_block.hpp, run/stack_block.hpp): a file may come
// from anywhere, so any bytes must decode to rows within their bounds, or be
// refused with the vector as it was. What decodes encodes back to blocks
// that decode to the same rows. A crash, a sanitizer report or a broken
// bound is a bug.
//
// Input: a byte choosing the decoder (modulo 5: samples, counter values,
// spans, frames, stacks; a stack block's first id is the byte divided by 5,
// plus 1), a byte of row count, a byte of stacks, counter tracks, strings or
// frames, then the block.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "run/counter_block.hpp"
#include "run/sample_block.hpp"
#include "run/span_block.hpp"
#include "run/stack_block.hpp"

namespace {

using stepscope::CounterValue;
using stepscope::Frame;
using stepscope::Sample;
using stepscope::Span;
using stepscope::StackNode;

bool same(const Frame& a, const Frame& b) { return a == b; }

bool same(const StackNode& a, const StackNode& b) { return a.parent == b.parent && a.frame == b.frame; }

bool same(const Sample& a, const Sample& b) {
  return a.ts_ns == b.ts_ns && a.pid == b.pid && a.tid == b.tid && a.stack == b.stack && a.state == b.state &&
         a.holds_gil == b.holds_gil;
}

bool same(const Span& a, const Span& b) {
  return a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.pid == b.pid && a.tid == b.tid && a.kind == b.kind &&
         a.name == b.name && a.correlation == b.correlation && a.bytes == b.bytes && a.detail == b.detail;
}

bool same(const CounterValue& a, const CounterValue& b) {
  return a.track == b.track && a.ts_ns == b.ts_ns && std::memcmp(&a.value, &b.value, sizeof a.value) == 0;
}

// Decodes `block` after one row already there; checks the bounds and the
// round trip.
template <typename Row, typename Decode, typename Encode>
void check(std::string_view block, size_t count, Decode decode, Encode encode) {
  std::vector<Row> rows(1);
  if (!decode(block, count, rows).empty()) {
    if (rows.size() != 1) __builtin_trap();
    return;
  }
  if (rows.size() != count + 1) __builtin_trap();
  std::vector<Row> decoded(rows.begin() + 1, rows.end()), again;
  if (!decode(encode(decoded), count, again).empty() || again.size() != count) __builtin_trap();
  for (size_t i = 0; i < count; ++i) {
    if (!same(decoded[i], again[i])) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  std::string_view block(reinterpret_cast<const char*>(data) + 3, size - 3);
  const size_t count = data[1], limit = data[2];  // stacks, tracks or strings
  if (data[0] % 5 == 3) {
    check<Frame>(
        block, count,
        [limit](std::string_view bytes, size_t n, std::vector<Frame>& out) {
          std::string error = stepscope::decode_frame_block(bytes, n, limit, out);
          for (size_t i = 1; i < out.size() && error.empty(); ++i) {
            if (out[i].function >= limit || out[i].file >= limit || out[i].kind > stepscope::FrameKind::kMarker) {
              __builtin_trap();
            }
          }
          return error;
        },
        [](const std::vector<Frame>& rows) { return stepscope::encode_frame_block(rows); });
  } else if (data[0] % 5 == 4) {
    const auto first = static_cast<stepscope::StackId>(data[0] / 5 + 1);
    check<StackNode>(
        block, count,
        [limit, first](std::string_view bytes, size_t n, std::vector<StackNode>& out) {
          const size_t before = out.size();
          std::string error = stepscope::decode_stack_block(bytes, n, first, limit, out);
          for (size_t k = 0; before + k < out.size() && error.empty(); ++k) {  // stack first + k
            if (out[before + k].parent >= first + k || out[before + k].frame >= limit) __builtin_trap();
          }
          return error;
        },
        [first](const std::vector<StackNode>& rows) { return stepscope::encode_stack_block(rows, first); });
  } else if (data[0] % 5 == 0) {
    check<Sample>(
        block, count,
        [limit](std::string_view bytes, size_t n, std::vector<Sample>& out) {
          std::string error = stepscope::decode_sample_block(bytes, n, limit, out);
          for (size_t i = 1; i < out.size() && error.empty(); ++i) {
            if (out[i].state > stepscope::ThreadState::kDiskWait || out[i].stack >= limit) __builtin_trap();
          }
          return error;
        },
        [](const std::vector<Sample>& rows) { return stepscope::encode_sample_block(rows); });
  } else if (data[0] % 5 == 2) {
    check<Span>(
        block, count,
        [limit](std::string_view bytes, size_t n, std::vector<Span>& out) {
          std::string error = stepscope::decode_span_block(bytes, n, limit, out);
          for (size_t i = 1; i < out.size() && error.empty(); ++i) {
            if (static_cast<int>(out[i].kind) >= stepscope::kSpanKindCount || out[i].name >= limit ||
                out[i].detail >= limit) {
              __builtin_trap();
            }
          }
          return error;
        },
        [](const std::vector<Span>& rows) { return stepscope::encode_span_block(rows); });
  } else {
    check<CounterValue>(
        block, count,
        [limit](std::string_view bytes, size_t n, std::vector<CounterValue>& out) {
          std::string error = stepscope::decode_counter_block(bytes, n, limit, out);
          for (size_t i = 1; i < out.size() && error.empty(); ++i) {
            if (out[i].track >= limit) __builtin_trap();
          }
          return error;
        },
        [](const std::vector<CounterValue>& rows) { return stepscope::encode_counter_block(rows); });
  }
  return 0;
}
