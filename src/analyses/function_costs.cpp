#include "analyses/function_costs.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_set>

namespace stepscope {

namespace {

using FunctionKey = std::tuple<StringId, StringId, FrameKind>;

FunctionKey key_of(const Frame& frame) { return {frame.function, frame.file, frame.kind}; }

}  // namespace

FunctionCosts function_costs(const Profile& profile) {
  std::map<FunctionKey, FunctionCost> by_function;
  FunctionCosts out;
  std::vector<FunctionKey> on_stack;
  for (const ThreadProfile& thread : profile.threads) {
    for (const StackWeight& weighted : thread.stacks) {
      out.profile_ns += weighted.weight_ns;
      std::vector<FrameId> frames = profile.stacks().frames(weighted.stack);
      if (frames.empty()) continue;
      on_stack.clear();
      for (FrameId id : frames) on_stack.push_back(key_of(profile.frames().get(id)));
      std::sort(on_stack.begin(), on_stack.end());
      on_stack.erase(std::unique(on_stack.begin(), on_stack.end()), on_stack.end());
      for (const FunctionKey& key : on_stack) by_function[key].total_ns += weighted.weight_ns;
      by_function[key_of(profile.frames().get(frames.back()))].self_ns += weighted.weight_ns;
    }
  }
  for (auto& [key, cost] : by_function) {
    std::tie(cost.function, cost.file, cost.kind) = key;
    out.functions.push_back(cost);
  }
  // Stable: functions of equal cost keep the map's order, the same with every standard library.
  std::stable_sort(out.functions.begin(), out.functions.end(), [](const auto& a, const auto& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.total_ns > b.total_ns;
  });
  return out;
}

}  // namespace stepscope
