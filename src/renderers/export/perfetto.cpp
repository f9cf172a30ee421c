#include "renderers/export/perfetto.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyses/profile.hpp"
#include "importers/chrome_trace.hpp"
#include "renderers/json_writer.hpp"
#include "run/frame_label.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

using ThreadKey = std::pair<int64_t, int64_t>;

// A slice past this many periods without a sample of its thread has ended.
constexpr int64_t kGapPeriods = 2;

enum Lane : int64_t { kThreadLane = 0, kStepLane = 1, kPhaseLane = 2, kSpanLane = 3 };

// Microseconds with exactly three decimals: every nanosecond survives.
std::string micros(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  uint64_t magnitude = ns < 0 ? uint64_t(0) - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, magnitude / 1000, magnitude % 1000);
}

// The traceEvents array, one event per line; `first` says whether it has
// none yet (it outlives a writer: a file of several runs).
class EventWriter {
 public:
  EventWriter(std::string& out, bool& first) : out_(out), first_(first) {}
  std::string& next() {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    return out_;
  }

 private:
  std::string& out_;
  bool& first_;
};

// Process and thread ids as the file writes them. An imported trace's string
// ids ("Spans", "Traces" in Kineto's files) became synthetic numbers far
// below zero (kSyntheticIdBase), named after the string: they go back as
// that string, which viewers expect, and which reads back to the same track.
class TrackIds {
 public:
  explicit TrackIds(const Run& run) {
    for (const Process& p : run.processes) {
      if (is_synthetic_id(p.pid) && p.command != StringTable::kEmpty) pids_[p.pid] = run.strings.get(p.command);
    }
    for (const Thread& t : run.threads) {
      if (is_synthetic_id(t.tid) && t.name != StringTable::kEmpty) tids_[{t.pid, t.tid}] = run.strings.get(t.name);
    }
  }
  void pid(JsonObject& o, int64_t pid) const {
    auto found = pids_.find(pid);
    found == pids_.end() ? o.number("pid", pid) : o.text("pid", found->second);
  }
  void tid(JsonObject& o, int64_t pid, int64_t tid) const {
    auto found = tids_.find({pid, tid});
    found == tids_.end() ? o.number("tid", tid) : o.text("tid", found->second);
  }
  void track(JsonObject& o, int64_t pid, int64_t tid) const {
    this->pid(o, pid);
    this->tid(o, pid, tid);
  }

 private:
  std::map<int64_t, std::string_view> pids_;
  std::map<ThreadKey, std::string_view> tids_;
};

void slice(EventWriter& events, const TrackIds& ids, std::string_view name, std::string_view cat, int64_t pid,
           int64_t tid, int64_t start_ns, int64_t end_ns) {
  std::string& s = events.next();
  JsonObject o(s);
  o.text("ph", "X").text("cat", cat).text("name", name);
  ids.track(o, pid, tid);
  o.literal("ts", micros(start_ns)).literal("dur", micros(std::max<int64_t>(0, end_ns - start_ns)));
}

void name_event(EventWriter& events, const TrackIds& ids, std::string_view what, int64_t pid, const int64_t* tid,
                std::string_view name) {
  std::string& s = events.next();
  JsonObject o(s);
  o.text("ph", "M").text("name", what);
  ids.pid(o, pid);
  if (tid) ids.tid(o, pid, *tid);
  o.field("args");
  JsonObject args(s);
  args.text("name", name);
}

Lane lane_of(SpanKind kind) {
  switch (kind) {
    case SpanKind::kStep: return kStepLane;
    case SpanKind::kDataWait:
    case SpanKind::kForward:
    case SpanKind::kBackward:
    case SpanKind::kOptimizer: return kPhaseLane;
    default: return kSpanLane;
  }
}

const char* lane_suffix(int64_t lane) {
  switch (lane) {
    case kStepLane: return "steps";
    case kPhaseLane: return "phases";
    default: return "spans";
  }
}

// Where each span goes: its own thread's track, or a companion lane when the
// thread's track holds sample slices.
class TrackPlan {
 public:
  TrackPlan(const Run& run, const std::set<ThreadKey>& sampled) : sampled_(sampled) {
    for (const Span& s : run.spans) tid_of(s);
  }
  int64_t tid_of(const Span& span) {
    if (!sampled_.contains({span.pid, span.tid})) return span.tid;
    int64_t lane = lane_of(span.kind);
    lanes_.insert({span.pid, span.tid, lane});
    return span.tid + lane * kPerfettoLaneStride;
  }
  const std::set<std::tuple<int64_t, int64_t, int64_t>>& lanes() const { return lanes_; }

 private:
  const std::set<ThreadKey>& sampled_;
  std::set<std::tuple<int64_t, int64_t, int64_t>> lanes_;  // (pid, tid, lane)
};

// Samples of one thread as nested slices: a frame stays open while
// consecutive samples keep it in their stack.
class SampleSlicer {
 public:
  SampleSlicer(const Run& run, const std::vector<std::string>& labels, int64_t period_ns, EventWriter& events,
               const TrackIds& ids)
      : run_(run), labels_(labels), period_ns_(period_ns), events_(events), ids_(ids) {}

  void thread(int64_t pid, int64_t tid, const std::vector<const Sample*>& samples) {
    pid_ = pid;
    tid_ = tid;
    open_.clear();
    int64_t last_ts = 0;
    for (const Sample* s : samples) {
      if (!open_.empty() && s->ts_ns - last_ts > kGapPeriods * period_ns_) close_from(0, last_ts + period_ns_);
      std::vector<FrameId> frames = run_.stacks.frames(s->stack);
      size_t common = 0;
      while (common < open_.size() && common < frames.size() && open_[common].first == frames[common]) ++common;
      close_from(common, s->ts_ns);
      for (size_t i = common; i < frames.size(); ++i) open_.emplace_back(frames[i], s->ts_ns);
      last_ts = s->ts_ns;
    }
    close_from(0, last_ts + period_ns_);
  }

 private:
  void close_from(size_t depth, int64_t end_ns) {
    while (open_.size() > depth) {
      auto [frame, start] = open_.back();
      open_.pop_back();
      slice(events_, ids_, labels_.at(frame), "sample", pid_, tid_, start, end_ns);
    }
  }

  const Run& run_;
  const std::vector<std::string>& labels_;
  int64_t period_ns_;
  EventWriter& events_;
  const TrackIds& ids_;
  int64_t pid_ = 0, tid_ = 0;
  std::vector<std::pair<FrameId, int64_t>> open_;  // root first: frame, start
};

std::map<ThreadKey, std::vector<const Sample*>> samples_by_thread(const Run& run, const PerfettoOptions& options) {
  std::map<ThreadKey, std::vector<const Sample*>> by_thread;
  for (const Sample& s : run.samples) {
    if (sample_in_profile(s, {.include_idle = options.include_idle})) by_thread[{s.pid, s.tid}].push_back(&s);
  }
  for (auto& [key, samples] : by_thread) {
    std::stable_sort(samples.begin(), samples.end(),
                     [](const Sample* a, const Sample* b) { return a->ts_ns < b->ts_ns; });
  }
  return by_thread;
}

void write_names(const Run& run, const TrackPlan& plan, const TrackIds& ids, EventWriter& events) {
  std::set<int64_t> named;
  for (const Process& p : run.processes) {
    std::string_view command = run.strings.get(p.command);
    if (!command.empty() && named.insert(p.pid).second) name_event(events, ids, "process_name", p.pid, nullptr, command);
  }
  bool system_counters = std::any_of(run.counter_tracks.begin(), run.counter_tracks.end(),
                                     [](const CounterTrack& t) { return t.pid == 0; });
  if (system_counters && !named.contains(0)) name_event(events, ids, "process_name", 0, nullptr, "system");
  for (const Thread& t : run.threads) {
    std::string_view name = run.strings.get(t.name);
    if (!name.empty()) name_event(events, ids, "thread_name", t.pid, &t.tid, name);
  }
  for (const auto& [pid, tid, lane] : plan.lanes()) {
    int64_t lane_tid = tid + lane * kPerfettoLaneStride;
    std::string name = fmt::format("{} {}", thread_label(run, pid, tid), lane_suffix(lane));
    name_event(events, ids, "thread_name", pid, &lane_tid, name);
  }
}

// A span's detail is the input shapes as the trace wrote them: JSON text
// that goes back verbatim under Kineto's key, so the file reads back to the
// same detail. Only a complete, valid JSON value (simdjson checks its UTF-8
// and syntax) is written verbatim; other text becomes a "detail" string.
void append_detail(JsonObject& args, std::string_view detail) {
  simdjson::dom::parser parser;
  simdjson::dom::element value;
  if (!parser.parse(detail.data(), detail.size()).get(value)) {
    args.literal("Input Dims", detail);
  } else {
    args.text("detail", detail);
  }
}

void write_spans(const Run& run, TrackPlan& plan, const TrackIds& ids, EventWriter& events) {
  for (const Span& span : run.spans) {
    std::string& s = events.next();
    JsonObject o(s);
    o.text("ph", "X").text("cat", perfetto_category(span.kind)).text("name", run.strings.get(span.name));
    ids.track(o, span.pid, plan.tid_of(span));
    o.literal("ts", micros(span.start_ns)).literal("dur", micros(std::max<int64_t>(0, span.end_ns - span.start_ns)));
    if (span.correlation == 0 && span.bytes == 0 && span.detail == StringTable::kEmpty) continue;
    o.field("args");
    JsonObject args(s);
    if (span.correlation != 0) args.number("correlation", span.correlation);
    if (span.bytes != 0) args.number("bytes", span.bytes);
    if (span.detail != StringTable::kEmpty) append_detail(args, run.strings.get(span.detail));
  }
}

void write_counters(const Run& run, const TrackIds& ids, EventWriter& events) {
  for (const CounterValue& v : run.counter_values) {
    if (v.track >= run.counter_tracks.size() || !std::isfinite(v.value)) continue;  // JSON has no NaN
    const CounterTrack& track = run.counter_tracks[v.track];
    std::string_view name = run.strings.get(track.name);
    size_t dot = name.rfind('.');
    bool split = dot != std::string_view::npos && dot > 0 && dot + 1 < name.size();
    std::string& s = events.next();
    JsonObject o(s);
    o.text("ph", "C").text("name", split ? name.substr(0, dot) : name);
    ids.pid(o, track.pid);
    o.literal("ts", micros(v.ts_ns));
    o.field("args");
    JsonObject args(s);
    args.literal(split ? name.substr(dot + 1) : "value", fmt::format("{}", v.value));
  }
}

void write_flows(const Run& run, TrackPlan& plan, const TrackIds& ids, EventWriter& events) {
  uint64_t id = 0;
  for (const Flow& flow : run.flows) {
    if (flow.from >= run.spans.size() || flow.to >= run.spans.size()) continue;
    std::string_view kind = run.strings.get(flow.kind);
    if (kind.empty()) kind = "flow";
    ++id;
    for (bool start : {true, false}) {
      const Span& span = run.spans[start ? flow.from : flow.to];
      std::string& s = events.next();
      JsonObject o(s);
      o.text("ph", start ? "s" : "f");
      if (!start) o.text("bp", "e");
      o.number("id", id).text("cat", kind).text("name", kind);
      ids.track(o, span.pid, plan.tid_of(span));
      o.literal("ts", micros(span.start_ns));
    }
  }
}

}  // namespace

const char* perfetto_category(SpanKind kind) {
  switch (kind) {
    case SpanKind::kCpuOp: return "cpu_op";
    case SpanKind::kUserRange: return "user_annotation";
    case SpanKind::kRuntimeCall: return "cuda_runtime";
    case SpanKind::kKernel: return "kernel";
    case SpanKind::kMemcpy: return "gpu_memcpy";
    case SpanKind::kMemset: return "gpu_memset";
    case SpanKind::kPythonFunction: return "python_function";
    case SpanKind::kSync: return "cuda_sync";
    case SpanKind::kDeviceAnnotation: return "gpu_user_annotation";
    default: return span_kind_name(kind);
  }
}

PerfettoFile::PerfettoFile() : text_("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[") {}

void PerfettoFile::add(const Run& run, const PerfettoOptions& options) {
  auto samples = samples_by_thread(run, options);
  std::optional<int64_t> period = run.sample_period_ns();
  if (!samples.empty() && (!period || *period <= 0)) {
    throw InputError("the run has samples but no valid sample_period_ns in its metadata");
  }
  std::set<ThreadKey> sampled;
  for (const auto& [key, list] : samples) sampled.insert(key);
  TrackPlan plan(run, sampled);
  TrackIds ids(run);

  EventWriter events(text_, empty_);
  write_names(run, plan, ids, events);
  if (!samples.empty()) {
    std::vector<std::string> labels = frame_labels(run.strings, run.frames);
    SampleSlicer slicer(run, labels, *period, events, ids);
    for (const auto& [key, list] : samples) slicer.thread(key.first, key.second, list);
  }
  write_spans(run, plan, ids, events);
  write_counters(run, ids, events);
  write_flows(run, plan, ids, events);
}

void PerfettoFile::write(std::ostream& out) {
  text_ += "\n]}\n";
  out << text_;
}

void write_perfetto(const Run& run, std::ostream& out, const PerfettoOptions& options) {
  PerfettoFile file;
  file.add(run, options);
  file.write(out);
}

}  // namespace stepscope
