#include "run/stack_tree.hpp"

#include <algorithm>
#include <stdexcept>

namespace stepscope {

const char* frame_kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kPython: return "python";
    case FrameKind::kNative: return "native";
    case FrameKind::kMarker: break;
  }
  return "marker";
}

std::optional<FrameKind> frame_kind_from_name(std::string_view name) {
  for (FrameKind kind : {FrameKind::kPython, FrameKind::kNative, FrameKind::kMarker}) {
    if (name == frame_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

size_t FrameTable::Hash::operator()(const Frame& f) const {
  uint64_t h = (uint64_t{f.function} << 32) ^ f.file;
  h ^= (uint64_t{static_cast<uint32_t>(f.line)} << 8 | static_cast<uint8_t>(f.kind)) * 0x9E3779B97F4A7C15ull;
  return std::hash<uint64_t>{}(h);
}

FrameId FrameTable::intern(const Frame& frame) {
  if (auto found = index_.find(frame); found != index_.end()) return found->second;
  if (frames_.size() >= UINT32_MAX) throw std::length_error("frame table is full");
  auto id = static_cast<FrameId>(frames_.size());
  frames_.push_back(frame);
  index_.emplace(frame, id);
  return id;
}

namespace {
uint64_t child_key(StackId parent, FrameId frame) { return (uint64_t{parent} << 32) | frame; }
}  // namespace

StackTree::StackTree() { nodes_.push_back({kRoot, 0}); }

StackId StackTree::push(StackId parent, FrameId frame) {
  if (parent >= nodes_.size()) throw std::out_of_range("stack parent does not exist");
  index_loaded();
  auto key = child_key(parent, frame);
  if (auto found = children_.find(key); found != children_.end()) return found->second;
  StackId id = append_loaded({parent, frame});
  index_loaded();
  return id;
}

void StackTree::index_loaded() {
  for (; indexed_ < nodes_.size(); ++indexed_) {
    const StackNode& node = nodes_[indexed_];
    children_.emplace(child_key(node.parent, node.frame), static_cast<StackId>(indexed_));
  }
}

StackId StackTree::intern(const std::vector<FrameId>& frames_root_first) {
  StackId stack = kRoot;
  for (FrameId frame : frames_root_first) stack = push(stack, frame);
  return stack;
}

std::vector<FrameId> StackTree::frames(StackId id) const {
  std::vector<FrameId> out;
  while (id != kRoot) {
    const StackNode& n = nodes_.at(id);
    out.push_back(n.frame);
    id = n.parent;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

StackId StackTree::append_loaded(StackNode node) {
  // Parents always precede children, which also rules out cycles.
  if (node.parent >= nodes_.size()) throw std::out_of_range("stack parent does not exist");
  if (nodes_.size() >= UINT32_MAX) throw std::length_error("stack tree is full");
  auto id = static_cast<StackId>(nodes_.size());
  nodes_.push_back(node);
  return id;
}

}  // namespace stepscope
