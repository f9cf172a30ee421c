// One gzip member holding `data`, with zlib (already linked: libelf needs it).
// For outputs a reader expects gzipped, such as pprof's profile.pb.gz.
#pragma once

#include <string>
#include <string_view>

namespace stepscope {

std::string gzip_compress(std::string_view data);

}  // namespace stepscope
