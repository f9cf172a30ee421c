#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "run/stack_block.hpp"

namespace stepscope {

// Found by the vectors' == through StackNode's namespace.
bool operator==(const StackNode& a, const StackNode& b) { return a.parent == b.parent && a.frame == b.frame; }

namespace {

TEST(StackBlock, EveryFrameSurvivesExactly) {
  using Line = std::numeric_limits<int32_t>;
  std::vector<Frame> frames = {{1, 2, 3, FrameKind::kPython},
                               {0, 0, 0, FrameKind::kMarker},
                               {7, 1, Line::max(), FrameKind::kNative},
                               {2, 7, Line::min(), FrameKind::kPython},
                               {7, 7, -1, FrameKind::kNative}};
  std::vector<Frame> decoded;
  EXPECT_EQ(decode_frame_block(encode_frame_block(frames), frames.size(), 8, decoded), "");
  EXPECT_EQ(decoded, frames);
}

TEST(StackBlock, EveryStackSurvivesExactlyFromItsFirstId) {
  // Stacks 5 to 9: parents anywhere before each (the root too), frames in any order.
  std::vector<StackNode> nodes = {{0, 3}, {5, 0}, {6, 9}, {2, 9}, {8, 1}};
  std::vector<StackNode> decoded;
  EXPECT_EQ(decode_stack_block(encode_stack_block(nodes, 5), nodes.size(), 5, 10, decoded), "");
  EXPECT_EQ(decoded, nodes);
}

// What a recorder meets: each new stack pushes a frame on the one before it,
// and the frames are new ones, numbered in order.
TEST(StackBlock, ARecordingsStacksTakeAFewBytesARow) {
  std::vector<Frame> frames;
  std::vector<StackNode> nodes;
  for (uint32_t i = 0; i < 1000; ++i) {
    frames.push_back({2 * i + 1, 2 * i + 2, static_cast<int32_t>(10 + i % 300), FrameKind::kPython});
    nodes.push_back({i % 20 == 0 ? 0 : i, i});  // stacks 1 to 1000
  }
  std::string frame_block = encode_frame_block(frames), stack_block = encode_stack_block(nodes, 1);
  EXPECT_LT(frame_block.size(), frames.size() * 3) << "bytes for 1000 frames: " << frame_block.size();
  EXPECT_LT(stack_block.size(), nodes.size() * 2) << "bytes for 1000 stacks: " << stack_block.size();
  std::vector<Frame> decoded_frames;
  std::vector<StackNode> decoded_nodes;
  EXPECT_EQ(decode_frame_block(frame_block, frames.size(), 2001, decoded_frames), "");
  EXPECT_EQ(decode_stack_block(stack_block, nodes.size(), 1, 1000, decoded_nodes), "");
  EXPECT_EQ(decoded_frames, frames);
  EXPECT_EQ(decoded_nodes, nodes);
}

TEST(StackBlock, BadFramesAreRefusedAndLeaveTheVectorAlone) {
  std::vector<Frame> frames = {{1, 2, 3, FrameKind::kPython}, {3, 1, 0, FrameKind::kNative}};
  std::string good = encode_frame_block(frames);
  std::vector<Frame> bad_kind = frames;
  bad_kind[1].kind = static_cast<FrameKind>(9);
  struct Case {
    std::string data;
    size_t count, strings;
    const char* expected;
  };
  for (const Case& c : {Case{"", 2, 4, "bad block header"}, Case{good, 30, 4, "bad block header"},
                        Case{good.substr(0, good.size() - 3), 2, 4, "corrupt compressed frames"},
                        Case{good, 1, 4, "frames do not fill the block"},
                        Case{good, 2, 3, "string 3 does not exist"},
                        Case{encode_frame_block(bad_kind), 2, 4, "unknown frame kind 9"}}) {
    std::vector<Frame> out(1);
    EXPECT_EQ(decode_frame_block(c.data, c.count, c.strings, out), c.expected) << c.count << " " << c.strings;
    EXPECT_EQ(out.size(), 1u);
  }
}

TEST(StackBlock, BadStacksAreRefusedAndLeaveTheVectorAlone) {
  std::vector<StackNode> nodes = {{0, 1}, {1, 2}};
  std::string good = encode_stack_block(nodes, 1);
  struct Case {
    std::string data;
    size_t count;
    StackId first;
    size_t frames;
    const char* expected;
  };
  // A parent that would not precede its child: encoded from stack 1 on, read as from stack 0 or as a cycle.
  std::string self_parent = encode_stack_block(std::vector<StackNode>{{0, 1}, {3, 2}}, 2);
  for (const Case& c : {Case{"", 2, 1, 4, "bad block header"},
                        Case{good.substr(0, good.size() - 3), 2, 1, 4, "corrupt compressed stacks"},
                        Case{good, 2, 0, 4, "stack 0, the root, is not stored"},
                        Case{self_parent, 2, 2, 4, "stack 3's parent does not precede it"},
                        Case{good, 2, 1, 2, "frame 2 does not exist"},
                        Case{good, 2, UINT32_MAX, 4, "stack ids out of range"}}) {
    std::vector<StackNode> out(1);
    EXPECT_EQ(decode_stack_block(c.data, c.count, c.first, c.frames, out), c.expected) << c.expected;
    EXPECT_EQ(out.size(), 1u);
  }
}

}  // namespace
}  // namespace stepscope
