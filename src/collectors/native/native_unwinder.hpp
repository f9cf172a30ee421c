// Unwinding a copied user stack into native frames (elfutils' libdwfl, from
// the CFI in .eh_frame / .debug_frame), without touching the process beyond
// reading /proc/PID/maps and the files it maps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/native/perf_stack_sampler.hpp"
#include "collectors/native/symbol_index.hpp"

namespace stepscope {

struct NativeFrame {
  uint64_t pc = 0;
  // Views owned by the unwinder, valid as long as it lives.
  std::string_view function;  // demangled; empty when no symbol covers the pc
  std::string_view module;    // the mapped file's path; empty when no module covers the pc
  // CPython's evaluation loop (_PyEval_EvalFrameDefault, its .cold part), where
  // the sampler puts the Python frames it runs.
  bool python_eval = false;
};

struct UnwindResult {
  bool complete = false;    // the walk reached the thread's outermost frame
  std::string stop_reason;  // why it stopped early, when not complete
};

class NativeUnwinder {
 public:
  // `indexes`: the symbol indexes it shares with the unwinders of other
  // processes (by default, none).
  explicit NativeUnwinder(pid_t pid, std::shared_ptr<SymbolIndexes> indexes = std::make_shared<SymbolIndexes>());
  ~NativeUnwinder();
  NativeUnwinder(const NativeUnwinder&) = delete;
  NativeUnwinder& operator=(const NativeUnwinder&) = delete;

  // The frames of `sample`, innermost first, into `out` (cleared first).
  // Frames found before a failure are kept. Modules mapped since the last
  // look at /proc/PID/maps are found when a pc falls outside every known one.
  UnwindResult unwind(const UserStackSample& sample, std::vector<NativeFrame>& out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stepscope
