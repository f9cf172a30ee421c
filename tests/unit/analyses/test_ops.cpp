// The ops analysis on hand-made spans: nesting as torch nests (children
// that spill past their parent, overlapping siblings, identical intervals),
// merged same-name only children, filtered names, ProfilerStep folding,
// device time through correlation, grouping by input shapes.
#include <gtest/gtest.h>

#include "analyses/ops.hpp"

namespace {

using stepscope::OpRowKind;
using stepscope::OpStats;
using stepscope::SpanKind;

constexpr int64_t kUs = 1000;

struct OpsBuilder {
  stepscope::Run run;
  void span(SpanKind kind, std::string_view name, int64_t start_us, int64_t end_us, int64_t tid = 1,
            int64_t correlation = 0, std::string_view shapes = {}, int64_t pid = 1) {
    stepscope::Span s{start_us * kUs, end_us * kUs, pid, tid, kind, run.strings.intern(name)};
    s.correlation = correlation;
    s.detail = run.strings.intern(shapes);
    run.spans.push_back(s);
  }
  void op(std::string_view name, int64_t start_us, int64_t end_us, int64_t tid = 1) {
    span(SpanKind::kCpuOp, name, start_us, end_us, tid);
  }
};

const OpStats& row(const stepscope::OpsAnalysis& ops, std::string_view name,
                   OpRowKind kind = OpRowKind::kHost) {
  for (const OpStats& op : ops.ops) {
    if (op.name == name && op.kind == kind) return op;
  }
  static OpStats none;
  ADD_FAILURE() << "no row " << name;
  return none;
}

TEST(Ops, SelfTimeIsDurationMinusDirectChildren) {
  OpsBuilder b;
  b.op("outer", 0, 100);
  b.op("mid", 10, 60);
  b.op("leaf", 20, 30);
  b.op("leaf", 40, 45);
  b.op("mid", 70, 90);
  auto ops = stepscope::analyze_ops(b.run);
  EXPECT_EQ(row(ops, "outer").self_cpu_ns, (100 - 50 - 20) * kUs);
  EXPECT_EQ(row(ops, "outer").cpu_total_ns, 100 * kUs);
  EXPECT_EQ(row(ops, "mid").calls, 2);
  EXPECT_EQ(row(ops, "mid").self_cpu_ns, (50 - 15 + 20) * kUs);
  EXPECT_EQ(row(ops, "leaf").self_cpu_ns, 15 * kUs);
  EXPECT_EQ(ops.self_cpu_total_ns, 100 * kUs);  // self times partition the root
  EXPECT_EQ(ops.ops.front().name, "mid");       // most self CPU first
}

TEST(Ops, SpillingChildBelongsToNoParentAndOverlapsGoNegative) {
  OpsBuilder b;
  b.op("parent", 0, 50);
  b.op("spills", 40, 80);  // ends past its parent: not its child
  b.op("holder", 100, 110);
  b.op("a", 101, 108);     // overlapping siblings: both children of holder
  b.op("b", 102, 109);     // b starts inside a but ends after it: a is closed
  auto ops = stepscope::analyze_ops(b.run);
  EXPECT_EQ(row(ops, "parent").self_cpu_ns, 50 * kUs);
  EXPECT_EQ(row(ops, "spills").self_cpu_ns, 40 * kUs);
  EXPECT_EQ(row(ops, "holder").self_cpu_ns, (10 - 7 - 7) * kUs);  // torch says -4 us too
}

TEST(Ops, BoundariesAndIdenticalIntervals) {
  OpsBuilder b;
  b.op("p", 0, 10);
  b.op("at_end", 10, 10);  // starts at the parent's end: not a child
  b.op("same", 20, 30);
  b.op("twin", 20, 30);    // identical: nests under the first in trace order
  auto ops = stepscope::analyze_ops(b.run);
  EXPECT_EQ(row(ops, "p").self_cpu_ns, 10 * kUs);
  EXPECT_EQ(row(ops, "same").self_cpu_ns, 0);
  EXPECT_EQ(row(ops, "twin").self_cpu_ns, 10 * kUs);
}

TEST(Ops, OnlyChildWithTheSameNameIsMerged) {
  OpsBuilder b;
  b.op("aten::to", 0, 100);
  b.op("aten::to", 10, 90);  // only child, same name: merged, not a call
  b.op("aten::copy_", 20, 40);
  b.op("aten::add", 200, 300);
  b.op("aten::add", 210, 220);  // same name but has a sibling: kept
  b.op("aten::mul", 230, 240);
  auto ops = stepscope::analyze_ops(b.run);
  EXPECT_EQ(row(ops, "aten::to").calls, 1);
  EXPECT_EQ(row(ops, "aten::to").self_cpu_ns, 80 * kUs);  // minus its grandchild, now a child
  EXPECT_EQ(row(ops, "aten::add").calls, 2);
  EXPECT_EQ(row(ops, "aten::add").self_cpu_ns, (80 + 10) * kUs);
}

TEST(Ops, ThreadsNestSeparatelyAndNamesAreFilteredAndFolded) {
  OpsBuilder b;
  b.op("outer", 0, 100, 1);
  b.op("other_thread", 10, 20, 2);  // same time, another thread: no parent
  b.op("aten::is_leaf", 30, 40, 1);  // torch drops it: not a child either
  b.span(SpanKind::kUserRange, "ProfilerStep#7", 0, 100, 3);
  b.span(SpanKind::kUserRange, "ProfilerStep#8", 100, 150, 3);
  b.span(SpanKind::kUserRange, "outer", 200, 210, 1);  // an annotation named like an op: its own row
  auto ops = stepscope::analyze_ops(b.run);
  EXPECT_EQ(row(ops, "outer").self_cpu_ns, 100 * kUs);
  EXPECT_EQ(row(ops, "other_thread").self_cpu_ns, 10 * kUs);
  EXPECT_EQ(row(ops, "ProfilerStep*", OpRowKind::kUserAnnotation).calls, 2);
  EXPECT_EQ(row(ops, "outer", OpRowKind::kUserAnnotation).calls, 1);
  for (const OpStats& op : ops.ops) EXPECT_NE(op.name, "aten::is_leaf");
}

TEST(Ops, DeviceTimeThroughCorrelationToTheInnermostOp) {
  OpsBuilder b;
  b.op("aten::linear", 0, 100);
  b.op("aten::addmm", 10, 50);
  b.span(SpanKind::kUserRange, "nccl:all_reduce", 15, 35);  // annotations own no launches
  b.span(SpanKind::kRuntimeCall, "cudaLaunchKernel", 20, 30, 1, 7);
  b.span(SpanKind::kRuntimeCall, "cudaLaunchKernel", 60, 70, 1, 8);  // directly under linear
  b.span(SpanKind::kKernel, "gemm", 200, 260, 7, 7, {}, 0);
  b.span(SpanKind::kKernel, "bias", 270, 275, 7, 8, {}, 0);
  b.span(SpanKind::kMemcpy, "Memcpy HtoD", 280, 290, 7, 99, {}, 0);  // no launch in the trace
  auto ops = stepscope::analyze_ops(b.run);
  EXPECT_EQ(row(ops, "aten::addmm").self_device_ns, 60 * kUs);
  EXPECT_EQ(row(ops, "aten::addmm").device_total_ns, 60 * kUs);
  EXPECT_EQ(row(ops, "aten::linear").self_device_ns, 5 * kUs);
  EXPECT_EQ(row(ops, "aten::linear").device_total_ns, 65 * kUs);
  EXPECT_EQ(row(ops, "cudaLaunchKernel").calls, 2);  // runtime calls are host rows, as in torch
  EXPECT_EQ(row(ops, "aten::addmm").self_cpu_ns, 20 * kUs);
  EXPECT_EQ(row(ops, "nccl:all_reduce", OpRowKind::kUserAnnotation).device_total_ns, 0);
  EXPECT_EQ(row(ops, "gemm", OpRowKind::kDevice).self_device_ns, 60 * kUs);
  EXPECT_EQ(row(ops, "Memcpy HtoD", OpRowKind::kDevice).device_total_ns, 10 * kUs);
  EXPECT_EQ(ops.ops.front().self_device_ns, 60 * kUs);  // device traces sort by self device time
  EXPECT_EQ(ops.ops.back().self_device_ns, 0);
  EXPECT_EQ(ops.self_device_total_ns, (60 + 5 + 60 + 5 + 10) * kUs);  // op rows and kernel rows
}

TEST(Ops, GroupByInputShapes) {
  OpsBuilder b;
  b.span(SpanKind::kCpuOp, "aten::mm", 0, 10, 1, 0, "[[2, 3], [3, 4]]");
  b.span(SpanKind::kCpuOp, "aten::mm", 20, 25, 1, 0, "[[2, 3], [3, 4]]");
  b.span(SpanKind::kCpuOp, "aten::mm", 30, 60, 1, 0, "[[8, 8], [8, 8]]");
  EXPECT_EQ(stepscope::analyze_ops(b.run).ops.size(), 1u);
  auto ops = stepscope::analyze_ops(b.run, {.group_by_input_shapes = true});
  ASSERT_EQ(ops.ops.size(), 2u);
  EXPECT_EQ(b.run.strings.get(ops.ops[0].input_shapes), "[[8, 8], [8, 8]]");
  EXPECT_EQ(ops.ops[0].calls, 1);
  EXPECT_EQ(ops.ops[1].calls, 2);
  EXPECT_EQ(ops.ops[1].cpu_total_ns, 15 * kUs);
}

TEST(Ops, EmptyRunHasNoRows) {
  stepscope::Run run;
  EXPECT_TRUE(stepscope::analyze_ops(run).ops.empty());
}

}  // namespace
