#include <gtest/gtest.h>

#include "run/run.hpp"

namespace stepscope {
namespace {

TEST(StringTable, InternsEachDistinctStringOnce) {
  StringTable table;
  EXPECT_EQ(table.intern(""), StringTable::kEmpty);
  StringId a = table.intern("forward");
  StringId b = table.intern("backward");
  EXPECT_NE(a, b);
  EXPECT_EQ(table.intern("forward"), a);
  EXPECT_EQ(table.get(a), "forward");
  EXPECT_EQ(table.size(), 3u);
}

TEST(StringTable, FindLooksUpWithoutInterning) {
  StringTable table;
  StringId a = table.intern("forward");
  EXPECT_EQ(table.find("forward"), a);
  EXPECT_EQ(table.find("backward"), std::nullopt);
  EXPECT_EQ(table.size(), 2u);
}

TEST(StringTable, KeepsArbitraryBytesIncludingNul) {
  StringTable table;
  std::string bytes("a\0b\xff\xfe;<x>", 9);
  StringId id = table.intern(bytes);
  EXPECT_EQ(table.get(id), bytes);
  EXPECT_NE(table.intern(std::string("a\0c", 3)), id);
}

TEST(StringTable, LookupsSurviveGrowthAndMove) {
  StringTable table;
  for (int i = 0; i < 10000; ++i) table.intern("name" + std::to_string(i));
  StringTable moved = std::move(table);
  EXPECT_EQ(moved.intern("name1234"), 1235u);
  EXPECT_EQ(moved.get(10000), "name9999");
}

TEST(StackTree, SharesPrefixes) {
  stepscope::Run run;
  FrameId main = run.intern_frame("main", "train.py", 10);
  FrameId step = run.intern_frame("step", "train.py", 20);
  FrameId load = run.intern_frame("load", "data.py", 5);
  StackId a = run.stacks.intern({main, step});
  StackId b = run.stacks.intern({main, load});
  EXPECT_NE(a, b);
  EXPECT_EQ(run.stacks.node(a).parent, run.stacks.node(b).parent);
  EXPECT_EQ(run.stacks.intern({main, step}), a);
  EXPECT_EQ(run.stacks.frames(a), (std::vector<FrameId>{main, step}));
  EXPECT_EQ(run.stacks.size(), 4u);  // root, main, main;step, main;load
  EXPECT_TRUE(run.stacks.frames(StackTree::kRoot).empty());
}

TEST(StackTree, RecursionMakesDeeperStacksNotCycles) {
  stepscope::Run run;
  FrameId f = run.intern_frame("f", "r.py", 1);
  StackId s = StackTree::kRoot;
  for (int depth = 0; depth < 100; ++depth) s = run.stacks.push(s, f);
  EXPECT_EQ(run.stacks.frames(s).size(), 100u);
}

// Stacks appended as loaded from a file are found by later pushes, frame 0
// too (the root's own, which no push may return).
TEST(StackTree, PushesFindTheStacksLoaded) {
  StackTree tree;
  EXPECT_EQ(tree.append_loaded({StackTree::kRoot, 0}), 1u);
  EXPECT_EQ(tree.append_loaded({1, 7}), 2u);
  EXPECT_EQ(tree.push(StackTree::kRoot, 0), 1u);
  EXPECT_EQ(tree.push(1, 7), 2u);
  EXPECT_EQ(tree.push(2, 7), 3u);
  EXPECT_EQ(tree.append_loaded({3, 0}), 4u);
  EXPECT_EQ(tree.push(3, 0), 4u);
  EXPECT_EQ(tree.push(2, 7), 3u);
  EXPECT_EQ(tree.size(), 5u);
}

TEST(StackTree, RejectsMissingParent) {
  StackTree tree;
  EXPECT_THROW(tree.push(5, 0), std::out_of_range);
  EXPECT_THROW(tree.append_loaded({7, 0}), std::out_of_range);
}

TEST(FrameTable, SameFunctionOnAnotherLineIsAnotherFrame) {
  stepscope::Run run;
  EXPECT_NE(run.intern_frame("f", "a.py", 1), run.intern_frame("f", "a.py", 2));
  EXPECT_NE(run.intern_frame("f", "a.py", 1), run.intern_frame("f", "a.py", 1, FrameKind::kNative));
  EXPECT_EQ(run.intern_frame("f", "a.py", 1), run.intern_frame("f", "a.py", 1));
}

TEST(SpanKind, NamesRoundTrip) {
  for (int i = 0; i < kSpanKindCount; ++i) {
    auto kind = static_cast<SpanKind>(i);
    EXPECT_EQ(span_kind_from_name(span_kind_name(kind)), kind);
  }
  EXPECT_FALSE(span_kind_from_name("no_such_kind"));
}

TEST(Run, SamplePeriodMustBeAPositiveInteger) {
  stepscope::Run run;
  EXPECT_FALSE(run.sample_period_ns());
  run.metadata["sample_period_ns"] = "10000000";
  EXPECT_EQ(run.sample_period_ns(), 10000000);
  for (const char* bad : {"", "0", "-5", "10ms", "1e7"}) {
    run.metadata["sample_period_ns"] = bad;
    EXPECT_FALSE(run.sample_period_ns()) << bad;
  }
}

}  // namespace
}  // namespace stepscope
