// How a run file keeps its spans (schema 5, docs/run-format.md): blocks of
// consecutive spans, each one compressed BLOB, as samples and counter values
// are kept (sample_block.hpp, counter_block.hpp).
//
// A recording writes several spans a step per process (the step, its data
// wait, forward, backward and optimizer), a GPU run one per kernel and copy.
// A row each cost ~34 bytes on disk and a step of SQLite per span to read:
// the largest table of a recording once samples and counter values were in
// blocks, and most of the third of a job report's CPU that SQLite took.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// What a block of spans is ordered and windowed by: their starts, as rows of
// spans were (a window keeps the spans that start in it).
inline int64_t block_time(const Span& span) { return span.start_ns; }

// The block's spans, in order, encoded and compressed.
std::string encode_span_block(std::span<const Span> spans);

// Appends the `count` spans of `data` to `out`, whose names and details must
// be below `strings` (the run's string count). Returns an empty string on
// success, else what is wrong with the bytes (the caller names the row).
std::string decode_span_block(std::string_view data, size_t count, size_t strings, std::vector<Span>& out);

}  // namespace stepscope
