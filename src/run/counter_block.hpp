// How a run file keeps its counter values (schema 4, docs/run-format.md):
// blocks of consecutive values, each one compressed BLOB, as samples are
// kept (sample_block.hpp).
//
// A recording writes a value per counter track ten times a second or once
// (hundreds of tracks: CPUs, disks, processes, GPUs), most of them equal or
// near the track's previous one. A row each cost ~20 bytes on disk and a
// step of SQLite per value to read: more than half of a long recording's
// file, and a sixth of a job report's CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// What a block of counter values is ordered and windowed by.
inline int64_t block_time(const CounterValue& value) { return value.ts_ns; }

// The block's values, in order, encoded and compressed.
std::string encode_counter_block(std::span<const CounterValue> values);

// Appends the `count` values of `data` to `out`, whose tracks must be below
// `tracks` (the run's counter tracks). Returns an empty string on success,
// else what is wrong with the bytes (the caller names the row).
std::string decode_counter_block(std::string_view data, size_t count, size_t tracks, std::vector<CounterValue>& out);

}  // namespace stepscope
