#include "util/gzip_decoder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/gzip_encoder.hpp"

namespace stepscope {
namespace {

// About 300 kB of trace-like text, varied enough that it compresses to
// many deflate blocks.
std::string trace_text() {
  std::mt19937 random(7);
  std::string text = "[";
  while (text.size() < 300000) {
    text += R"({"ph": "X", "name": "aten::op)" + std::to_string(random() % 500) + R"(", "ts": )" +
            std::to_string(random()) + R"(, "dur": )" + std::to_string(random() % 10000) + "},\n";
  }
  text += "{}]";
  return text;
}

// The compressed bytes, handed out in the sizes the decoder asks for.
GzipDecoder::Fill source(const std::string& packed) {
  return [&packed, offset = size_t{0}](char* to, size_t count) mutable {
    size_t n = std::min(count, packed.size() - offset);
    std::copy_n(packed.data() + offset, n, to);
    offset += n;
    return n;
  };
}

struct Inflated {
  std::string bytes;  // everything read before the error
  std::string error;  // "" when it ended cleanly
};

// Reads `packed` to its end or its first error, in reads of the sizes given,
// taken in turn.
Inflated inflate(const std::string& packed, const std::vector<size_t>& read_sizes) {
  GzipDecoder decoder("t.json.gz");
  GzipDecoder::Fill fill = source(packed);
  Inflated result;
  std::vector<char> buffer;
  try {
    for (size_t i = 0;; ++i) {
      buffer.resize(read_sizes[i % read_sizes.size()]);
      size_t got = decoder.read(buffer.data(), buffer.size(), fill);
      if (got == 0) break;
      result.bytes.append(buffer.data(), got);
    }
  } catch (const InputError& error) {
    result.error = error.what();
  }
  return result;
}

const std::vector<std::vector<size_t>> kReadSizes = {
    {1}, {7}, {4096}, {65536}, {70001}, {size_t{512} << 10}, {size_t{4} << 20}, {3, size_t{600} << 10, 100}};

TEST(GzipDecoder, InflatesWholeWhateverTheReadSizes) {
  std::string text = trace_text();
  std::string packed = gzip_compress(text) + gzip_compress("second member");
  for (const std::vector<size_t>& sizes : kReadSizes) {
    Inflated inflated = inflate(packed, sizes);
    EXPECT_EQ(inflated.error, "") << "reads of " << sizes[0];
    EXPECT_TRUE(inflated.bytes == text + "second member") << "reads of " << sizes[0];
  }
}

// The bytes before a corruption, and the error, are the same for any read
// sizes: one thread and two read a trace in different sizes, and must
// import it the same. Most random damage to deflate data decodes as other
// text and only the trailer's checksum finds it; the damage tried here is
// the kind found inside the stream (a bad distance, symbol or block).
TEST(GzipDecoder, GivesTheSameBytesBeforeACorruptionWhateverTheReadSizes) {
  std::string packed = gzip_compress(trace_text());
  std::mt19937 random(11);
  int inside_the_stream = 0;
  for (int attempt = 0; attempt < 400 && inside_the_stream < 6; ++attempt) {
    std::string corrupt = packed;
    size_t at = 10 + random() % (corrupt.size() / 4);
    for (size_t i = at; i < at + 4; ++i) corrupt[i] = static_cast<char>(random());
    Inflated reference = inflate(corrupt, kReadSizes.back());
    if (reference.error.empty() || reference.error.find("checksum") != std::string::npos) continue;
    ++inside_the_stream;
    for (const std::vector<size_t>& sizes : kReadSizes) {
      Inflated other = inflate(corrupt, sizes);
      EXPECT_EQ(other.error, reference.error) << "reads of " << sizes[0] << ", corrupt at " << at;
      EXPECT_EQ(other.bytes.size(), reference.bytes.size()) << "reads of " << sizes[0] << ", corrupt at " << at;
      EXPECT_TRUE(other.bytes == reference.bytes) << "reads of " << sizes[0] << ", corrupt at " << at;
    }
  }
  EXPECT_EQ(inside_the_stream, 6);
}

TEST(GzipDecoder, TheErrorStaysAtEveryLaterRead) {
  std::string packed = gzip_compress(trace_text());
  packed.resize(packed.size() / 2);
  GzipDecoder decoder("t.json.gz");
  GzipDecoder::Fill fill = source(packed);
  std::vector<char> buffer(size_t{1} << 20);
  EXPECT_THROW(
      while (decoder.read(buffer.data(), buffer.size(), fill) > 0) {}, InputError);
  EXPECT_THROW(decoder.read(buffer.data(), buffer.size(), fill), InputError);
  EXPECT_THROW(decoder.read(buffer.data(), 1, fill), InputError);
}

}  // namespace
}  // namespace stepscope
