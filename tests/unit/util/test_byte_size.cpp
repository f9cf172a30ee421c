#include <gtest/gtest.h>

#include "util/byte_size.hpp"

namespace stepscope {
namespace {

TEST(ByteSizeTest, NumbersTakeUnitsOfPowersOf1024) {
  EXPECT_EQ(parse_byte_size("1048576"), 1048576u);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("800B"), 800u);
  EXPECT_EQ(parse_byte_size("300K"), 300u * 1024);
  EXPECT_EQ(parse_byte_size("500M"), 500u * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("500m"), 500u * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("500MB"), 500u * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("500MiB"), 500u * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("2G"), uint64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("2gib"), uint64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("3T"), uint64_t{3} << 40);
}

TEST(ByteSizeTest, AnythingElseIsNoSize) {
  for (const char* text : {"", "M", "-5M", "+5M", "1.5G", "5 M", " 5M", "5M ", "5X", "5MM", "5Mi", "5iB", "0x10",
                           "18446744073709551616", "20000000T"}) {
    EXPECT_FALSE(parse_byte_size(text)) << text;
  }
}

TEST(ByteSizeTest, SizesAreDescribedInTheLargestUnitTheyReach) {
  EXPECT_EQ(describe_byte_size(800), "800 B");
  EXPECT_EQ(describe_byte_size(1024), "1 KiB");
  EXPECT_EQ(describe_byte_size(500u * 1024 * 1024), "500 MiB");
  EXPECT_EQ(describe_byte_size(uint64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(describe_byte_size(1'000'000), "976.6 KiB");
}

}  // namespace
}  // namespace stepscope
