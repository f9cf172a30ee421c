#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "analyses/recent_answers.hpp"
#include "analyses/thread_key.hpp"

namespace stepscope {
namespace {

// Keys that share a slot (k and k + 64) and keys seen again: every answer is
// the function's, and a key asked again while it holds its slot is not
// answered anew.
TEST(RecentAnswers, AnswersAsTheFunctionAndAsksItOnlyOnAMiss) {
  RecentAnswers<int64_t, int64_t> recent;
  std::map<int64_t, int> asked;
  auto square = [&](int64_t key) {
    ++asked[key];
    return key * key;
  };
  std::mt19937 random(3);
  for (int i = 0; i < 10000; ++i) {
    int64_t key = static_cast<int64_t>(random() % 8) + (random() % 2 ? 64 : 0);
    EXPECT_EQ(recent.get(key, square), key * key) << key;
  }
  EXPECT_GT(asked[3], 1) << "3 and 67 share a slot: each pushes the other out";
  for (int i = 0; i < 100; ++i) EXPECT_EQ(recent.get(20, square), 400);
  EXPECT_EQ(asked[20], 1);
}

TEST(RecentAnswers, ThreadKeysOfOneProcessAreToldApart) {
  RecentAnswers<ThreadKey, int64_t, ThreadKeyHash> recent;
  for (int round = 0; round < 3; ++round) {
    for (int64_t tid = 100; tid < 300; ++tid) {
      EXPECT_EQ(recent.get({7, tid}, [](const ThreadKey& t) { return t.second - t.first; }), tid - 7);
    }
  }
}

}  // namespace
}  // namespace stepscope
