// How a run file keeps its samples (schema 3, docs/run-format.md): blocks of
// consecutive samples, each stored as one compressed BLOB.
//
// A sample row cost ~26 bytes on disk; a day of an 8-rank job is billions of
// them. Consecutive samples are nearly alike (a round's samples share their
// time, a thread's stack rarely changes between rounds), so a block keeps
// them column by column as differences from the previous sample, LEB128
// varints, and deflates the whole: a few bytes a sample, lossless, so every
// analysis sees exactly the samples it saw before.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// What a block of samples is ordered and windowed by.
inline int64_t block_time(const Sample& sample) { return sample.ts_ns; }

// The block's samples, in order, encoded and compressed.
std::string encode_sample_block(std::span<const Sample> samples);

// Appends the `count` samples of `data` to `out`, whose stacks must be below
// `stacks` (the run's stack count). Returns an empty string on success, else
// what is wrong with the bytes (the caller names the row).
std::string decode_sample_block(std::string_view data, size_t count, size_t stacks, std::vector<Sample>& out);

}  // namespace stepscope
