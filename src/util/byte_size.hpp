// Sizes in bytes as people write and read them: `record --max-size 500M`,
// and "500 MiB" in a report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepscope {

// Whole digits, then optionally a unit: K, M, G or T, alone or followed by B
// or iB, in either case, all powers of 1024 ("500M", "2GiB", "1048576").
// Nullopt for anything else, and for a size beyond 64 bits.
std::optional<uint64_t> parse_byte_size(std::string_view text);

// The size in the largest unit it reaches: "500 MiB", "1.5 GiB", "800 B".
std::string describe_byte_size(uint64_t bytes);

}  // namespace stepscope
