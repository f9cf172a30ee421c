// Frames and stacks. A frame is (function, file, line, kind), interned; a
// stack is a node of a prefix tree, (parent stack, frame), so the millions of
// samples of a long recording share their common prefixes and a sample is a
// single integer.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "run/string_table.hpp"

namespace stepscope {

using FrameId = uint32_t;
using StackId = uint32_t;

enum class FrameKind : uint8_t {
  kPython = 0,  // a Python function, with file and line
  kNative = 1,  // a native (C/C++) function
  kMarker = 2,  // a synthetic frame such as "<GC>" or "<idle>"
};

// "python", "native" or "marker", and back (empty for any other name).
const char* frame_kind_name(FrameKind kind);
std::optional<FrameKind> frame_kind_from_name(std::string_view name);

struct Frame {
  StringId function = StringTable::kEmpty;
  StringId file = StringTable::kEmpty;
  int32_t line = 0;  // 0 when unknown
  FrameKind kind = FrameKind::kPython;
  bool operator==(const Frame&) const = default;
};

class FrameTable {
 public:
  FrameId intern(const Frame& frame);
  const Frame& get(FrameId id) const { return frames_.at(id); }
  size_t size() const { return frames_.size(); }
  const std::vector<Frame>& all() const { return frames_; }

 private:
  struct Hash {
    size_t operator()(const Frame& f) const;
  };
  std::vector<Frame> frames_;
  std::unordered_map<Frame, FrameId, Hash> index_;
};

struct StackNode {
  StackId parent = 0;
  FrameId frame = 0;
};

class StackTree {
 public:
  // Stack 0 is the empty stack (the root); it has no frame.
  static constexpr StackId kRoot = 0;

  StackTree();

  // The stack made of `parent` with `frame` pushed on top.
  StackId push(StackId parent, FrameId frame);
  // Interns a whole stack given root-first.
  StackId intern(const std::vector<FrameId>& frames_root_first);

  const StackNode& node(StackId id) const { return nodes_.at(id); }
  size_t size() const { return nodes_.size(); }
  const std::vector<StackNode>& all() const { return nodes_; }

  // The frames of `id`, root first.
  std::vector<FrameId> frames(StackId id) const;

  // Appends a node as loaded from a file; its parent must already exist.
  StackId append_loaded(StackNode node);

 private:
  void index_loaded();

  std::vector<StackNode> nodes_;
  // (parent << 32 | frame) -> child, for the nodes before indexed_: nodes
  // appended as loaded are indexed by the first push that needs them, as a
  // run read from a file is mostly only read.
  std::unordered_map<uint64_t, StackId> children_;
  size_t indexed_ = 1;  // the root is nobody's child
};

}  // namespace stepscope
