// How a run file keeps its frames and stacks (schema 6, docs/run-format.md):
// blocks of consecutive rows, each one compressed BLOB, as samples, spans and
// counter values are kept (sample_block.hpp).
//
// A job's node of eight ranks holds tens of thousands of stacks; a row each
// took a step of SQLite to read, an eighth of a job report's CPU
// (bench/README.md, "Frames and stacks in blocks"). The tables
// are small next to the samples, and a recorder adds to them as it meets new
// code, so their last block is rewritten until it is full (RunWriter).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "run/stack_tree.hpp"

namespace stepscope {

// The most rows a block of frames or stacks holds: the last, partly full
// block is written again at each commit that adds to it.
inline constexpr size_t kRowsPerStackBlock = 1024;

// The block's frames, in order, encoded and compressed.
std::string encode_frame_block(std::span<const Frame> frames);

// Appends the `count` frames of `data` to `out`, whose function and file
// names must be below `strings` (the run's string count). Returns an empty
// string on success, else what is wrong with the bytes (the caller names the
// row); `out` is then as it was.
std::string decode_frame_block(std::string_view data, size_t count, size_t strings, std::vector<Frame>& out);

// The block's stack nodes, the first of them stack `first` (1 or more: the
// root, 0, is implicit), encoded and compressed.
std::string encode_stack_block(std::span<const StackNode> nodes, StackId first);

// Appends the `count` nodes of `data`, the first of them stack `first`, to
// `out`: each node's parent must precede it and its frame be below `frames`.
std::string decode_stack_block(std::string_view data, size_t count, StackId first, size_t frames,
                               std::vector<StackNode>& out);

}  // namespace stepscope
