#include "analyses/ops.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "analyses/device/activity.hpp"
#include "analyses/spans/span_index.hpp"
#include "run/profiler_step_name.hpp"

namespace stepscope {

const char* op_row_kind_name(OpRowKind kind) {
  switch (kind) {
    case OpRowKind::kHost:
      return "host";
    case OpRowKind::kUserAnnotation:
      return "user_annotation";
    case OpRowKind::kDevice:
      break;
  }
  return "device";
}

namespace {

constexpr uint32_t kNone = UINT32_MAX;

bool is_host_event(SpanKind kind) {
  return kind == SpanKind::kCpuOp || kind == SpanKind::kUserRange ||
         kind == SpanKind::kPythonFunction || kind == SpanKind::kRuntimeCall;
}

// The ops that torch's key_averages() leaves out (profiler_util._filter_name).
bool torch_filters_name(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kFiltered = {
      "[memory]",
      "[OutOfMemory]",
      "profiler::_record_function_enter",
      "profiler::_record_function_enter_new",
      "profiler::_record_function_exit",
      "aten::is_leaf",
      "aten::output_nr",
      "aten::_version"};
  return std::find(kFiltered.begin(), kFiltered.end(), name) != kFiltered.end();
}

// Per string id: the id torch groups under (kNone for filtered names), with
// every ProfilerStep#N folded onto the first one seen, as torch's
// "ProfilerStep*". Computed once per distinct name, not per event.
class NameClasses {
 public:
  explicit NameClasses(const StringTable& strings) : strings_(strings), group_(strings.size(), kUnset) {}

  uint32_t group(StringId name) {
    uint32_t& group = group_[name];
    if (group != kUnset) return group;
    std::string_view text = strings_.get(name);
    if (torch_filters_name(text)) {
      group = kNone;
    } else if (text.starts_with("ProfilerStep#")) {  // torch folds by prefix
      if (profiler_step_ == kUnset) profiler_step_ = name;
      group = profiler_step_;
    } else {
      group = name;
    }
    return group;
  }
  bool is_profiler_step(uint32_t group) const { return group == profiler_step_; }

 private:
  static constexpr uint32_t kUnset = UINT32_MAX - 1;
  const StringTable& strings_;
  std::vector<uint32_t> group_;
  uint32_t profiler_step_ = kUnset;
};

// One host span's place in the nesting forest of its thread, parallel to
// the index's spans (HostSpansByThread::all()), whose times the passes below
// read in the same order: nothing is copied out of the spans themselves
// (64 bytes each, scattered), and the table is a third smaller than with
// the times in it (first-touch page faults cost more than the passes).
struct Node {
  // The device time of its own launches until folding (merge_into_rows moves
  // a merged child's onto its parent), then with its subtree's added
  // (fold_into_rows). One field, not two: a row's self device time is then
  // taken as its self CPU time is, each node's total less its children's.
  int64_t device_ns = 0;
  // Its name's group (NameClasses), then, once merge_into_rows has found its
  // row, that row (unless merged): one field, not two, as merging reads a
  // parent's group only after the parent's row is found, and then reads it
  // from the row (RowTable::group_of).
  uint32_t group_then_row = 0;
  // Before merging (nest), then after merging only children into same-named
  // parents (merge_into_rows rewrites it in place, parents first).
  uint32_t parent = kNone;
  // Direct children, after merging: 0, 1, or 2 for more (merging asks only
  // whether there is exactly one).
  uint8_t children = 0;
  SpanKind kind = SpanKind::kOther;
  // A host event that torch lists: the other host spans (kind other, names
  // torch filters) have a node only to keep the table parallel, and are
  // skipped by every pass.
  bool event = false;
  bool merged = false;  // merged into its parent: not a row of its own
};
static_assert(sizeof(Node) <= 24, "ops holds a node per host span: millions");

// The nodes, parallel to the host spans in torch's order, and where each
// thread's nodes begin (nesting never crosses threads).
struct HostNodes {
  std::span<const HostSpan> spans;
  std::vector<Node> nodes;
  std::vector<uint32_t> thread_begin;  // one per thread, then nodes.size()
};

int64_t duration(const Span& span) { return span.end_ns - span.start_ns; }
int64_t duration(const HostSpan& span) { return span.end_ns - span.start_ns; }

// Host events in torch's order: by thread, then start, then longest first;
// ties keep trace order (torch's sorts are stable). The index has that order.
HostNodes host_nodes(const Run& run, const HostSpansByThread& host_spans, NameClasses& names) {
  HostNodes out;
  out.spans = host_spans.all();
  out.nodes.reserve(out.spans.size());  // one allocation, each node written once
  for (const HostSpan& host : out.spans) {
    const Span& span = run.spans[host.id];
    Node& node = out.nodes.emplace_back();
    if (!is_host_event(span.kind)) continue;
    node.group_then_row = names.group(span.name);
    node.kind = span.kind;
    node.event = node.group_then_row != kNone;
  }
  for (const HostSpansByThread::Thread& thread : host_spans.threads()) {
    out.thread_begin.push_back(static_cast<uint32_t>(thread.spans.data() - out.spans.data()));
  }
  out.thread_begin.push_back(static_cast<uint32_t>(out.nodes.size()));
  return out;
}

// torch's _populate_cpu_children: a stack of open events per thread; an event
// whose start is at or past the top's end, or whose end is past it, closes
// the top. Sets each node's parent before merging, counts each parent's
// children (0, 1, or 2 for more: merging asks only whether there is one),
// and notes in the same pass (each pass over millions of nodes costs memory
// bandwidth) which operator each span's launches belong to: the innermost cpu
// op at or above its node, carried on the stack with each open node (kNone
// for a span with no node or no op above it).
std::vector<uint32_t> nest(HostNodes& host, size_t span_count) {
  std::vector<Node>& nodes = host.nodes;
  std::vector<uint32_t> owner_of_span(span_count, kNone);
  struct Open {
    uint32_t node;
    uint32_t owner;
    int64_t end_ns;
  };
  std::vector<Open> open;
  for (size_t t = 0; t + 1 < host.thread_begin.size(); ++t) {
    open.clear();
    for (uint32_t i = host.thread_begin[t]; i < host.thread_begin[t + 1]; ++i) {
      Node& node = nodes[i];
      if (!node.event) continue;
      const HostSpan& span = host.spans[i];
      uint32_t parent_owner = kNone;
      while (!open.empty()) {
        const Open& top = open.back();
        if (span.start_ns >= top.end_ns || span.end_ns > top.end_ns) {
          open.pop_back();
        } else {
          node.parent = top.node;
          parent_owner = top.owner;
          if (nodes[top.node].children < 2) nodes[top.node].children++;
          break;
        }
      }
      uint32_t owner = node.kind == SpanKind::kCpuOp ? i : parent_owner;
      open.push_back({i, owner, span.end_ns});
      owner_of_span[span.id] = owner;
    }
  }
  return owner_of_span;
}

// The device activity each host event launched itself: a device span's
// correlation names its runtime launch, which belongs to the innermost cpu op
// around it: Kineto gives the activity that op's External id. User annotations
// do not count (in the NCCL trace of testdata, a kernel launched inside
// "nccl:all_reduce" inside the op record_param_comms carries the op's id).
void attach_device_time(const Run& run, const DeviceLaunches& launches, const std::vector<uint32_t>& owner_of_span,
                        std::vector<Node>& nodes) {
  for (auto [device, launch] : launches.activity()) {
    if (launch == kNoLaunch) continue;
    uint32_t op = owner_of_span[launch];
    if (op != kNone) nodes[op].device_ns += duration(run.spans[device]);
  }
}

struct RowKey {
  uint32_t group;
  OpRowKind kind;
  StringId shapes;
  bool operator==(const RowKey&) const = default;
};
struct RowKeyHash {
  size_t operator()(const RowKey& k) const {
    return std::hash<uint64_t>()((uint64_t{k.group} << 32) ^ (uint64_t{k.shapes} << 2) ^
                                 static_cast<uint64_t>(k.kind));
  }
};

class RowTable {
 public:
  RowTable(const Run& run, const NameClasses& names, bool by_shapes)
      : run_(run), names_(names), by_shapes_(by_shapes) {}

  // The row's number, the row added when new.
  uint32_t find(uint32_t group, OpRowKind kind, StringId shapes) {
    if (!by_shapes_) {
      // Rows by (group, kind) alone: a table indexed by both, not a hash per event.
      size_t slot = size_t{group} * kOpRowKinds + static_cast<size_t>(kind);
      if (slot >= direct_.size()) direct_.resize(std::max(slot + 1, run_.strings.size() * kOpRowKinds), kNoRow);
      if (direct_[slot] == kNoRow) direct_[slot] = add(group, kind, StringTable::kEmpty);
      return direct_[slot];
    }
    RowKey key{group, kind, shapes};
    auto [found, inserted] = index_.try_emplace(key, static_cast<uint32_t>(rows_.size()));
    if (inserted) add(group, kind, shapes);
    return found->second;
  }
  OpStats& operator[](uint32_t row) { return rows_[row]; }
  uint32_t group_of(uint32_t row) const { return group_of_row_[row]; }
  OpStats& row(uint32_t group, OpRowKind kind, StringId shapes) { return rows_[find(group, kind, shapes)]; }
  std::vector<OpStats> take() { return std::move(rows_); }

 private:
  static constexpr size_t kOpRowKinds = 3;  // host, user annotation, device
  static constexpr uint32_t kNoRow = UINT32_MAX;

  uint32_t add(uint32_t group, OpRowKind kind, StringId shapes) {
    OpStats& stats = rows_.emplace_back();
    stats.name = names_.is_profiler_step(group) ? std::string(kProfilerStepGroup) : run_.strings.get(group);
    stats.kind = kind;
    stats.input_shapes = shapes;
    group_of_row_.push_back(group);
    return static_cast<uint32_t>(rows_.size() - 1);
  }

  const Run& run_;
  const NameClasses& names_;
  bool by_shapes_;
  std::vector<OpStats> rows_;
  std::vector<uint32_t> group_of_row_;  // by row: few, and read per node while merging
  std::unordered_map<RowKey, uint32_t, RowKeyHash> index_;  // by shapes
  std::vector<uint32_t> direct_;                            // not by shapes: by group and kind
};

// torch's _remove_dup_nodes: an only child with its parent's name is merged
// into the parent, which takes over its children and its device activity.
// Parents come before children in `nodes`, so one pass reaches the fixpoint.
// Whether node i is merged is decided at step i, so the rows of those that
// are not are found (and added, in the order the rows are listed) in the
// same pass.
void merge_into_rows(const Run& run, HostNodes& host, RowTable& table, bool by_shapes) {
  std::vector<Node>& nodes = host.nodes;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    Node& node = nodes[i];
    if (!node.event) continue;
    uint32_t p = node.parent;  // before merging: only iteration i rewrites it
    if (p != kNone && nodes[p].merged) p = nodes[p].parent;  // the merged parent's survivor
    node.parent = p;
    uint32_t group = node.group_then_row;
    if (p != kNone && table.group_of(nodes[p].group_then_row) == group && nodes[p].children == 1) {
      node.merged = true;
      nodes[p].children = node.children;
      nodes[p].device_ns = node.device_ns;  // torch: the parent takes the child's kernels
      continue;
    }
    OpRowKind kind = node.kind == SpanKind::kUserRange ? OpRowKind::kUserAnnotation : OpRowKind::kHost;
    node.group_then_row = table.find(group, kind, by_shapes ? run.spans[host.spans[i].id].detail : StringTable::kEmpty);
  }
}

// Children after parents: walking backwards folds subtrees upwards, so each
// node's device total is complete when it is reached and goes to its row;
// a child's times are taken off its parent's row's self times (its own
// device time is its total less its children's).
void fold_into_rows(HostNodes& host, RowTable& table) {
  std::vector<Node>& nodes = host.nodes;
  for (uint32_t i = static_cast<uint32_t>(nodes.size()); i-- > 0;) {
    const Node& node = nodes[i];
    if (!node.event || node.merged) continue;
    int64_t cpu_ns = duration(host.spans[i]);
    OpStats& row = table[node.group_then_row];
    row.calls++;
    row.cpu_total_ns += cpu_ns;
    row.self_cpu_ns += cpu_ns;
    row.device_total_ns += node.device_ns;
    row.self_device_ns += node.device_ns;
    if (node.parent == kNone) continue;
    OpStats& parent_row = table[nodes[node.parent].group_then_row];
    parent_row.self_cpu_ns -= cpu_ns;
    parent_row.self_device_ns -= node.device_ns;
    nodes[node.parent].device_ns += node.device_ns;
  }
}

}  // namespace

OpsAnalysis analyze_ops(const Run& run, const OpsOptions& options) {
  SpanIndex index(run);
  return analyze_ops(run, index.host_spans, index.launches, options);
}

OpsAnalysis analyze_ops(const Run& run, const HostSpansByThread& host_spans, const DeviceLaunches& launches,
                        const OpsOptions& options) {
  NameClasses names(run.strings);
  HostNodes host = host_nodes(run, host_spans, names);
  attach_device_time(run, launches, nest(host, run.spans.size()), host.nodes);
  RowTable table(run, names, options.group_by_input_shapes);
  merge_into_rows(run, host, table, options.group_by_input_shapes);
  fold_into_rows(host, table);
  bool has_device = false;
  // The launches list the device activity in trace order: no pass over every span to find it.
  for (const LaunchedActivity& activity : launches.activity()) {
    const Span& span = run.spans[activity.span];
    uint32_t group = names.group(span.name);
    if (group == kNone) continue;
    has_device = true;
    OpStats& row = table.row(group, OpRowKind::kDevice, span.detail);
    row.calls++;
    row.device_total_ns += duration(span);
    row.self_device_ns += duration(span);
  }

  OpsAnalysis result;
  result.grouped_by_input_shapes = options.group_by_input_shapes;
  result.ops = table.take();
  for (const OpStats& row : result.ops) {
    result.self_cpu_total_ns += row.self_cpu_ns;
    result.self_device_total_ns += row.self_device_ns;
  }
  auto sort_key = [has_device](const OpStats& row) { return has_device ? row.self_device_ns : row.self_cpu_ns; };
  std::stable_sort(result.ops.begin(), result.ops.end(), [&](const OpStats& a, const OpStats& b) {
    if (sort_key(a) != sort_key(b)) return sort_key(a) > sort_key(b);
    if (a.self_cpu_ns != b.self_cpu_ns) return a.self_cpu_ns > b.self_cpu_ns;
    return a.name < b.name;
  });
  return result;
}

}  // namespace stepscope
