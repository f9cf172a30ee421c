#include "run/stack_block.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "run/column_block.hpp"

namespace stepscope {

namespace {

// The least and the most a row's values take: a frame's three varints and a
// byte, a stack's two varints (a varint is 1 to 10 bytes).
constexpr size_t kMinBytesPerFrame = 4, kMaxBytesPerFrame = 31;
constexpr size_t kMinBytesPerStack = 2, kMaxBytesPerStack = 20;

bool fits_line(int64_t line) { return line >= INT32_MIN && line <= INT32_MAX; }

}  // namespace

// Four columns: function, file (each the difference from the previous frame's:
// a recorder interns a new frame's names just before it), line, kind.
std::string encode_frame_block(std::span<const Frame> frames) {
  ColumnWriter columns(frames.size() * 6);
  columns.deltas(frames, [](const Frame& f) { return uint64_t{f.function}; });
  columns.deltas(frames, [](const Frame& f) { return uint64_t{f.file}; });
  for (const Frame& f : frames) columns.signed_varint(f.line);
  for (const Frame& f : frames) columns.byte(static_cast<uint8_t>(f.kind));
  return columns.compressed();
}

// Two columns: how far back each node's parent is (1: the stack just
// before it, as a new stack's frames come root first), and its frame, the
// difference from the previous node's.
std::string encode_stack_block(std::span<const StackNode> nodes, StackId first) {
  ColumnWriter columns(nodes.size() * 3);
  StackId id = first;
  for (const StackNode& n : nodes) columns.varint(uint64_t{id++} - n.parent);
  columns.deltas(nodes, [](const StackNode& n) { return uint64_t{n.frame}; });
  return columns.compressed();
}

namespace {

std::string take_frames(ColumnReader& columns, size_t strings, std::span<Frame> frames) {
  IdRefs refs(strings, "string");
  columns.deltas(frames, [&](Frame& f, uint64_t function) { f.function = refs.take(function); });
  columns.deltas(frames, [&](Frame& f, uint64_t file) { f.file = refs.take(file); });
  if (std::string error = refs.error(); !error.empty()) return error;
  for (Frame& f : frames) {
    int64_t line = columns.signed_varint();
    if (!fits_line(line)) return fmt::format("line {} out of range", line);
    f.line = static_cast<int32_t>(line);
  }
  if (columns.failed() || columns.remaining() != frames.size()) return "frames do not fill the block";
  for (Frame& f : frames) {
    uint8_t kind = columns.byte();
    if (kind > static_cast<uint8_t>(FrameKind::kMarker)) return fmt::format("unknown frame kind {}", kind);
    f.kind = static_cast<FrameKind>(kind);
  }
  return {};
}

std::string take_stacks(ColumnReader& columns, StackId first, size_t frames, std::span<StackNode> nodes) {
  uint64_t id = first;
  for (StackNode& n : nodes) {
    uint64_t back = columns.varint();
    if (back < 1 || back > id) return fmt::format("stack {}'s parent does not precede it", id);
    n.parent = static_cast<StackId>(id++ - back);
  }
  IdRefs refs(frames, "frame");
  columns.deltas(nodes, [&](StackNode& n, uint64_t frame) { n.frame = refs.take(frame); });
  if (std::string error = refs.error(); !error.empty()) return error;
  if (columns.failed() || columns.remaining() != 0) return "stacks do not fill the block";
  return {};
}

}  // namespace

std::string decode_frame_block(std::string_view data, size_t count, size_t strings, std::vector<Frame>& out) {
  return decode_rows(data, count, kMinBytesPerFrame, kMaxBytesPerFrame, "frames", out,
                     [strings](ColumnReader& columns, std::span<Frame> frames) {
                       return take_frames(columns, strings, frames);
                     });
}

std::string decode_stack_block(std::string_view data, size_t count, StackId first, size_t frames,
                               std::vector<StackNode>& out) {
  if (first == StackTree::kRoot) return "stack 0, the root, is not stored";
  if (count > UINT32_MAX - first) return "stack ids out of range";
  return decode_rows(data, count, kMinBytesPerStack, kMaxBytesPerStack, "stacks", out,
                     [first, frames](ColumnReader& columns, std::span<StackNode> nodes) {
                       return take_stacks(columns, first, frames, nodes);
                     });
}

}  // namespace stepscope
