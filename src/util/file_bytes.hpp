// Reading an input file whole, transparently inflating gzip (torch.profiler
// writes traces as .json.gz), for inputs small enough to hold; large traces
// stream through ByteStream instead. Errors are InputError naming the file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/byte_stream.hpp"  // is_gzip

namespace stepscope {

// Spare capacity read_file_bytes leaves after the contents, so a SIMD JSON
// parser may read past the end without a copy. Equal to
// simdjson::SIMDJSON_PADDING; kept here so this header needs no simdjson.
inline constexpr size_t kFileBytesPadding = 64;

// The contents of `path`; when they start with the gzip magic (1f 8b) they are
// inflated, concatenated gzip members included. The result's capacity is at
// least size() + kFileBytesPadding.
// Throws InputError "cannot read PATH: REASON" when the file cannot be read,
// and "PATH: corrupt gzip data: ..." when inflating fails.
std::string read_file_bytes(const std::string& path);

// Inflates gzip data (one or more concatenated members); `source_name` only
// names the input in error messages. Same padding guarantee as above.
std::string inflate_gzip(std::string_view compressed, const std::string& source_name);

}  // namespace stepscope
