// The plain reader's byte scans: the SSE2 string scan (what x86-64 builds
// use) gives the same answers as the portable one (what other platforms build)
// at every start, end and content, including hits in the read-ahead past
// the end, which must never be reported.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "importers/json_scan.hpp"

namespace stepscope {
namespace {

// Bytes that matter to the scan, and some that do not.
constexpr char kAlphabet[] = {'"', '\\', '\n', '\x1f', '\x7f', '\x80', '\xff', ' ', '0',
                              '5', '9', '/', ':', '.', 'a', 'e', '-', '{'};

std::string random_text(std::mt19937& random, size_t size) {
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 1);
  std::uniform_int_distribution<int> plain(0, 3);
  std::string text(size, 'x');
  for (char& c : text) {
    // Mostly runs of plain letters or digits, so scans cross 16-byte loads.
    if (plain(random) == 0) c = kAlphabet[pick(random)];
    else if (plain(random) == 0) c = '7';
  }
  return text;
}

// Calls check(text, begin, end) for random texts and every sub-range of
// them, with read-ahead bytes after each end taken from the text itself.
template <typename Check>
void for_every_range(Check check) {
  std::mt19937 random(6);
  for (int round = 0; round < 200; ++round) {
    std::string text = random_text(random, 80);
    std::string padded = text + std::string(json_scan::kReadAhead, '"');
    for (size_t begin = 0; begin <= text.size(); ++begin) {
      for (size_t end = begin; end <= text.size(); ++end) check(padded.data(), begin, end);
    }
  }
}

#if defined(__SSE2__)
TEST(JsonScan, FindStringSpecialAgreesWithThePortableForm) {
  for_every_range([](const char* text, size_t begin, size_t end) {
    const char* portable = json_scan::portable::find_string_special(text + begin, text + end);
    const char* sse2 = json_scan::sse2::find_string_special(text + begin, text + end);
    ASSERT_EQ(sse2 - text, portable - text) << "range " << begin << ".." << end;
  });
}
#endif

TEST(JsonScan, PortableFormFindsWhatItSays) {
  std::string text = "1234567890123456789x\"ab\\c\x01" + std::string(json_scan::kReadAhead, '\0');
  const char* data = text.data();
  EXPECT_EQ(json_scan::portable::find_string_special(data, data + 26) - data, 20);
  EXPECT_EQ(json_scan::portable::find_string_special(data + 21, data + 26) - data, 23);
  EXPECT_EQ(json_scan::portable::find_string_special(data + 24, data + 26) - data, 25);
  EXPECT_EQ(json_scan::portable::find_string_special(data, data + 20) - data, 20);  // none: the end
  // What the build uses finds the same.
  EXPECT_EQ(json_scan::find_string_special(data + 21, data + 26) - data, 23);
}

}  // namespace
}  // namespace stepscope
