#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "run/counter_block.hpp"

namespace stepscope {
namespace {

// Equal to the bit: -0.0 is not 0.0, and a NaN keeps its payload.
void expect_same_values(const std::vector<CounterValue>& a, const std::vector<CounterValue>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].track, b[i].track) << i;
    EXPECT_EQ(a[i].ts_ns, b[i].ts_ns) << i;
    EXPECT_EQ(std::memcmp(&a[i].value, &b[i].value, sizeof(double)), 0) << i << ": " << a[i].value << " " << b[i].value;
  }
}

std::vector<CounterValue> round_trip(const std::vector<CounterValue>& values, size_t tracks) {
  std::vector<CounterValue> decoded;
  EXPECT_EQ(decode_counter_block(encode_counter_block(values), values.size(), tracks, decoded), "");
  return decoded;
}

TEST(CounterBlock, EveryValueSurvivesExactly) {
  using Time = std::numeric_limits<int64_t>;
  using Value = std::numeric_limits<double>;
  std::vector<CounterValue> values = {
      {0, 100, 0.0},        {1, 100, -0.0},       {2, 100, Value::quiet_NaN()}, {0, 200, 0.0},
      {1, 50, Value::infinity()}, {2, 300, -Value::infinity()}, {3, Time::min(), Value::denorm_min()},
      {3, Time::max(), Value::max()}, {0, 0, 1.5e9}, {0, 1, 1.5e9 + 1}};
  expect_same_values(values, round_trip(values, 4));
}

// A recording's values: a value per track and second, most tracks steady
// (memory, a disk at rest), some busy (CPU percentages).
TEST(CounterBlock, ARecordingsSecondsTakeAFewBytesAValue) {
  std::vector<CounterValue> values;
  for (int64_t second = 0; second < 10; ++second) {
    for (CounterTrackId track = 0; track < 400; ++track) {
      double value = track % 4 == 0 ? std::round(50 + 40 * std::sin(double(second * 7 + track))) : double(track) * 1e6;
      values.push_back({track, second * 1'000'000'000 + track * 1000, value});
    }
  }
  std::string block = encode_counter_block(values);
  EXPECT_LT(block.size(), values.size() * 3) << "bytes per value: " << double(block.size()) / double(values.size());
  expect_same_values(values, round_trip(values, 400));
}

TEST(CounterBlock, BadBytesAreRefusedAndLeaveTheVectorAlone) {
  std::vector<CounterValue> values = {{0, 10, 1.0}, {1, 20, 2.0}};
  std::string good = encode_counter_block(values);
  struct Case {
    std::string data;
    size_t count;
    size_t tracks;
    const char* expected;
  };
  for (const Case& c : {Case{"", 2, 2, "bad block header"}, Case{good, 3, 2, "bad block header"},
                        Case{good.substr(0, good.size() - 3), 2, 2, "corrupt compressed counter values"},
                        Case{good, 1, 2, "counter values do not fill the block"},
                        Case{good, 2, 1, "counter track 1 does not exist"},
                        Case{good, 2, 0, "counter track 0 does not exist"}}) {
    std::vector<CounterValue> out(1);
    EXPECT_EQ(decode_counter_block(c.data, c.count, c.tracks, out), c.expected) << c.count << " " << c.tracks;
    EXPECT_EQ(out.size(), 1u);
  }
}

}  // namespace
}  // namespace stepscope
