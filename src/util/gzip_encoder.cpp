#include "util/gzip_encoder.hpp"

#include <zlib.h>

#include <limits>
#include <stdexcept>

namespace stepscope {

namespace {

// windowBits 15 (the largest window) + 16: a gzip header and trailer, not zlib's.
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kMemLevel = 8;  // zlib's default

}  // namespace

std::string gzip_compress(std::string_view data) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, kMemLevel, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("gzip: zlib could not start deflate");
  }
  if (data.size() > std::numeric_limits<uInt>::max()) {
    deflateEnd(&stream);
    throw std::runtime_error("gzip: input over 4 GiB");
  }
  std::string out(deflateBound(&stream, static_cast<uLong>(data.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int status = deflate(&stream, Z_FINISH);  // deflateBound leaves room for all of it
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw std::runtime_error("gzip: deflate did not finish");
  return out;
}

}  // namespace stepscope
