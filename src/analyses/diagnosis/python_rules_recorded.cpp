// python_overhead on a recording with native frames (record --native): the
// step thread's samples in forward, backward and the optimizer tell the
// interpreter's time from the time inside operators, which a Python-only
// sampler cannot (docs/diagnosis.md, "python_overhead").
#include <algorithm>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"
#include "analyses/spans/intervals.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

// The interpreter's own native code: libpython, or a python executable that
// links it statically.
bool is_interpreter_file(std::string_view path) {
  const std::string_view name = path.substr(path.rfind('/') + 1);
  return name.starts_with("libpython") || name.starts_with("python");
}

struct InterpreterSplit {
  uint64_t interpreter = 0;  // innermost frame Python, or the interpreter's native code
  uint64_t native = 0;       // innermost frame in another library: an operator, BLAS, a C extension
  std::map<StringId, uint64_t> by_library;        // native samples by their innermost frame's file
  std::map<FrameId, uint64_t> by_python_frame;    // interpreter samples by their innermost Python frame
};

FrameId innermost_python_frame(const Run& run, StackId stack) {
  for (StackId at = stack; at != StackTree::kRoot; at = run.stacks.node(at).parent) {
    const FrameId frame = run.stacks.node(at).frame;
    if (run.frames.get(frame).kind == FrameKind::kPython) return frame;
  }
  return UINT32_MAX;
}

// The step thread's running samples inside forward, backward and the
// optimizer, by their innermost frame. A stack that could not be merged
// ends with its native half, the thread's native stack at its copy, which
// tells as well; one whose native half is empty ends at the marker and is
// left out.
InterpreterSplit split_phases(const Run& run, const DiagnosisFacts& f) {
  InterpreterSplit split;
  for (const Sample* s : f.step_samples) {
    if (s->state != ThreadState::kRunning || s->stack == StackTree::kRoot) continue;
    if (!covers(f.main_phases, s->ts_ns) || covers(f.main_data_waits, s->ts_ns)) continue;
    const Frame& leaf = run.frames.get(run.stacks.node(s->stack).frame);
    if (leaf.kind == FrameKind::kMarker) continue;
    if (leaf.kind == FrameKind::kNative && !is_interpreter_file(run.strings.get(leaf.file))) {
      ++split.native;
      ++split.by_library[leaf.file];
      continue;
    }
    ++split.interpreter;
    const FrameId python = innermost_python_frame(run, s->stack);
    if (python != UINT32_MAX) ++split.by_python_frame[python];
  }
  return split;
}

// "a (40%), b (30%)": the three largest of `counts`, as shares of `total`.
template <typename Key, typename Name>
std::string top_three(const std::map<Key, uint64_t>& counts, uint64_t total, Name name) {
  std::vector<std::pair<Key, uint64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    text += fmt::format("{}{} ({})", i ? ", " : "", name(sorted[i].first),
                        percent_text(static_cast<double>(sorted[i].second) / static_cast<double>(total)));
  }
  return text;
}

}  // namespace

std::optional<Finding> recorded_python_overhead(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary || f.step_samples.size() < kMinRuleSamples) return std::nullopt;
  const Run& run = in.run;
  InterpreterSplit split = split_phases(run, f);
  const uint64_t worked = split.interpreter + split.native;
  if (worked < kMinRuleSamples) return std::nullopt;
  // Each step sample stands for the same time: a share of them is a share of step time.
  const double share = static_cast<double>(split.interpreter) / static_cast<double>(f.step_samples.size());
  if (share < kPythonOverheadShare) return std::nullopt;
  Finding out = time_finding("python_overhead", share,
                             fmt::format("Python overhead: {} of step time runs the Python interpreter inside "
                                         "forward, backward and the optimizer, not operators",
                                         percent_text(share)));
  out.evidence.push_back(fmt::format(
      "of the step thread's {} samples on a CPU in forward, backward and the optimizer (native stacks: record "
      "--native), {} ran the interpreter (a Python frame or libpython innermost) and {} native code",
      worked, percent_text(static_cast<double>(split.interpreter) / static_cast<double>(worked)),
      percent_text(static_cast<double>(split.native) / static_cast<double>(worked))));
  if (!split.by_python_frame.empty()) {
    out.evidence.push_back("the interpreter's time by innermost Python function: " +
                           top_three(split.by_python_frame, split.interpreter, [&](FrameId frame) {
                             return frame_label(run.strings, run.frames.get(frame));
                           }));
  }
  if (!split.by_library.empty()) {
    out.evidence.push_back("native code by library: " + top_three(split.by_library, split.native, [&](StringId file) {
      const std::string& path = run.strings.get(file);
      return path.substr(path.rfind('/') + 1);
    }));
  }
  out.recommendation = std::string(
                           "Start with the Python functions above: vectorize their loops over tensors or take them "
                           "out of the step. ") +
                       kPythonOverheadRemedy;
  return out;
}

}  // namespace stepscope
