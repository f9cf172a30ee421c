#include "collectors/native/stack_merge.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stepscope {
namespace {

constexpr std::string_view kPython = "/usr/bin/python3.11";
constexpr std::string_view kLibc = "/lib/libc.so.6";
constexpr std::string_view kCtypes = "/lib/_ctypes.so";

NativeFrame native(std::string_view function, std::string_view module) {
  return {0, function, module, function == "_PyEval_EvalFrameDefault"};
}

PythonFrame python(std::string_view function, bool entry) {
  return {function, "x.py", 1, 0, entry};
}

// The merged stack as labels, outermost first: Python frames bare, native
// ones in brackets, the marker as "|".
std::string labels(std::span<const PythonFrame> py, std::span<const NativeFrame> nat,
                   const std::vector<MergedFrame>& merged) {
  std::string text;
  for (const MergedFrame& frame : merged) {
    if (!text.empty()) text += " ";
    switch (frame.part) {
      case MergedFrame::Part::kPython: text += py[frame.index].function; break;
      case MergedFrame::Part::kNative: text += "[" + std::string(nat[frame.index].function) + "]"; break;
      case MergedFrame::Part::kUnmergedMarker: text += "|"; break;
    }
  }
  return text;
}

// A ctypes qsort whose comparator is Python, as 3.11+ runs it: `main` and
// `run` in one evaluation-loop call, `cmp` in another.
struct QsortStacks {
  std::vector<PythonFrame> py = {python("cmp", true), python("run", false), python("<module>", true)};
  std::vector<NativeFrame> nat = {
      native("_PyEval_EvalFrameDefault", kPython), native("_PyFunction_Vectorcall", kPython),
      native("closure_fcn", kCtypes),               native("msort_with_tmp", kLibc),
      native("qsort_r", kLibc),                     native("_ctypes_callproc", kCtypes),
      native("PyObject_Vectorcall", kPython),       native("_PyEval_EvalFrameDefault", kPython),
      native("PyEval_EvalCode", kPython),           native("Py_BytesMain", kPython),
      native("__libc_start_call_main", kLibc)};
};

TEST(NativeStackMerge, PutsPythonFramesAtTheirEvaluationLoopCalls) {
  QsortStacks s;
  std::vector<MergedFrame> out;
  ASSERT_TRUE(merge_stacks(s.py, s.nat, true, out));
  EXPECT_EQ(labels(s.py, s.nat, out), "<module> run [_ctypes_callproc] [qsort_r] [msort_with_tmp] [closure_fcn] cmp");
}

TEST(NativeStackMerge, KeepsTheInterpretersFramesInsideTheInnermostCall) {
  std::vector<PythonFrame> py = {python("run", true)};
  std::vector<NativeFrame> nat = {native("list_sort_impl", kPython), native("builtin_sorted", kPython),
                                  native("_PyEval_EvalFrameDefault", kPython), native("Py_RunMain", kPython)};
  std::vector<MergedFrame> out;
  ASSERT_TRUE(merge_stacks(py, nat, true, out));
  EXPECT_EQ(labels(py, nat, out), "run [builtin_sorted] [list_sort_impl]");
}

TEST(NativeStackMerge, EveryFrameIsACallBefore311) {
  std::vector<PythonFrame> py = {python("inner", true), python("outer", true)};
  std::vector<NativeFrame> nat = {native("sqrt", kLibc), native("_PyEval_EvalFrameDefault", kPython),
                                  native("_PyFunction_Vectorcall", kPython),
                                  native("_PyEval_EvalFrameDefault", kPython)};
  std::vector<MergedFrame> out;
  ASSERT_TRUE(merge_stacks(py, nat, true, out));
  EXPECT_EQ(labels(py, nat, out), "outer inner [sqrt]");
}

TEST(NativeStackMerge, AShortenedWalkPutsTheUnreachedCallsOutside) {
  QsortStacks s;
  s.nat.resize(6);  // the walk stopped inside _ctypes_callproc
  std::vector<MergedFrame> out;
  ASSERT_TRUE(merge_stacks(s.py, s.nat, false, out));
  EXPECT_EQ(labels(s.py, s.nat, out), "<module> run [_ctypes_callproc] [qsort_r] [msort_with_tmp] [closure_fcn] cmp");
}

TEST(NativeStackMerge, StacksOfDifferentMomentsKeepBothPartsBehindAMarker) {
  QsortStacks s;
  s.py.erase(s.py.begin());  // read after cmp returned: one call fewer than the native stack holds
  std::vector<MergedFrame> out;
  EXPECT_FALSE(merge_stacks(s.py, s.nat, true, out));
  ASSERT_EQ(out.size(), s.py.size() + 1 + s.nat.size());
  EXPECT_EQ(labels(s.py, s.nat, out).substr(0, 16), "<module> run | [");
  // A complete walk with fewer calls than entry frames does not fit either.
  QsortStacks fewer;
  fewer.nat.erase(fewer.nat.begin());
  EXPECT_FALSE(merge_stacks(fewer.py, fewer.nat, true, out));
}

TEST(NativeStackMerge, ACompleteNativeStackWithoutTheLoopIsKeptUnmerged) {
  std::vector<PythonFrame> py = {python("run", true)};
  std::vector<NativeFrame> nat = {native("", ""), native("", "")};
  std::vector<MergedFrame> out;
  EXPECT_FALSE(merge_stacks(py, nat, true, out));
  EXPECT_EQ(out.size(), 4u);
}

TEST(NativeStackMerge, AWalkStoppedBeforeTheLoopGoesInsideTheInnermostCall) {
  // An assembly kernel without unwind data: the walk found it and stopped.
  std::vector<PythonFrame> py = {python("forward", false), python("run", true)};
  std::vector<NativeFrame> nat = {native("mkl_sgemm_kernel", "/lib/libtorch_cpu.so")};
  std::vector<MergedFrame> out;
  ASSERT_TRUE(merge_stacks(py, nat, false, out));
  EXPECT_EQ(labels(py, nat, out), "run forward [mkl_sgemm_kernel]");
}

TEST(NativeStackMerge, AThreadWithoutPythonFramesIsAllNative) {
  std::vector<NativeFrame> nat = {native("epoll_wait", kLibc), native("start_thread", kLibc)};
  std::vector<MergedFrame> out;
  ASSERT_TRUE(merge_stacks({}, nat, true, out));
  EXPECT_EQ(labels({}, nat, out), "[start_thread] [epoll_wait]");
}

}  // namespace
}  // namespace stepscope
