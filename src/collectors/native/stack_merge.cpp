#include "collectors/native/stack_merge.hpp"

#include <algorithm>

namespace stepscope {

namespace {

using Part = MergedFrame::Part;

// Where each evaluation-loop call's Python frames begin, outermost call
// first, as indexes into `python` (innermost first): the call runs the
// frames from its entry frame inwards, up to the next call's entry frame.
std::vector<size_t> entry_frames_outermost_first(std::span<const PythonFrame> python) {
  std::vector<size_t> entries;
  for (size_t i = python.size(); i-- > 0;) {
    // The outermost frame opens a call even if the reader missed its mark.
    if (python[i].entry || i + 1 == python.size()) entries.push_back(i);
  }
  return entries;
}

// The Python frames one evaluation-loop call runs, outermost first.
void push_call_frames(const std::vector<size_t>& entries, size_t call, std::vector<MergedFrame>& out) {
  const size_t inner_end = call + 1 < entries.size() ? entries[call + 1] : static_cast<size_t>(-1);
  for (size_t i = entries[call] + 1; i-- > 0;) {
    if (i == inner_end) break;
    out.push_back({Part::kPython, static_cast<uint32_t>(i)});
  }
}

void write_unmerged(std::span<const PythonFrame> python, std::span<const NativeFrame> native,
                    std::vector<MergedFrame>& out) {
  out.clear();
  for (size_t i = python.size(); i-- > 0;) out.push_back({Part::kPython, static_cast<uint32_t>(i)});
  out.push_back({Part::kUnmergedMarker, 0});
  for (size_t i = native.size(); i-- > 0;) out.push_back({Part::kNative, static_cast<uint32_t>(i)});
}

}  // namespace

bool merge_stacks(std::span<const PythonFrame> python, std::span<const NativeFrame> native,
                  bool native_complete, std::vector<MergedFrame>& out) {
  const std::vector<size_t> entries = entry_frames_outermost_first(python);
  const size_t eval_calls = static_cast<size_t>(
      std::count_if(native.begin(), native.end(), [](const NativeFrame& f) { return f.python_eval; }));
  if (entries.empty() && eval_calls == 0) {  // a thread running no Python code at all
    out.clear();
    for (size_t i = native.size(); i-- > 0;) out.push_back({Part::kNative, static_cast<uint32_t>(i)});
    return true;
  }
  // A walk that stopped early (code without unwind data, a stack deeper
  // than the copy) lost outer calls, never inner ones: what it found lies
  // inside the innermost calls, even when that is no call at all.
  const bool fits = native_complete ? eval_calls > 0 && eval_calls == entries.size()
                                    : eval_calls <= entries.size();
  if (!fits) {
    write_unmerged(python, native, out);
    return false;
  }
  // The interpreter's module is the one its evaluation loop is in (none
  // reached: then every frame found is inside the innermost call, and kept).
  auto eval = std::find_if(native.begin(), native.end(), [](const NativeFrame& f) { return f.python_eval; });
  const std::string_view interpreter = eval != native.end() ? eval->module : std::string_view();
  out.clear();
  size_t call = 0;
  // Calls the shortened native walk did not reach come first, with nothing between them.
  for (; call < entries.size() - eval_calls; ++call) push_call_frames(entries, call, out);
  // Native frames outside the outermost call are the interpreter's start-up
  // or a thread's bootstrap. The interpreter's own frames count only inside
  // the innermost call (a builtin at work); between calls they are glue.
  bool inside_python = call > 0;
  for (size_t i = native.size(); i-- > 0;) {
    const NativeFrame& frame = native[i];
    if (frame.python_eval) {
      push_call_frames(entries, call++, out);
      inside_python = true;
    } else if (inside_python && (frame.module != interpreter || call == entries.size())) {
      out.push_back({Part::kNative, static_cast<uint32_t>(i)});
    }
  }
  return true;
}

}  // namespace stepscope
