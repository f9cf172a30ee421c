// Where the time went, per function: the table py-spy's `top` and
// torch.profiler's key_averages() users read first.
#pragma once

#include <cstdint>
#include <vector>

#include "analyses/profile.hpp"

namespace stepscope {

struct FunctionCost {
  StringId function = StringTable::kEmpty;
  StringId file = StringTable::kEmpty;
  FrameKind kind = FrameKind::kPython;
  int64_t self_ns = 0;   // time with this function at the top of the stack
  int64_t total_ns = 0;  // time with it anywhere on the stack (recursion counted once)
};

struct FunctionCosts {
  int64_t profile_ns = 0;  // all the profile's time, the base of shares
  std::vector<FunctionCost> functions;  // by self time, then total time, descending
};

// Lines of one function are merged: a function is (name, file, kind).
FunctionCosts function_costs(const Profile& profile);

}  // namespace stepscope
