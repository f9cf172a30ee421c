#include "analyses/diagnosis/facts.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "analyses/counter_values_by_track.hpp"
#include "analyses/device/activity.hpp"
#include "analyses/device/properties.hpp"
#include "analyses/recent_answers.hpp"
#include "analyses/spans/span_index.hpp"
#include "analyses/spans/string_match.hpp"
#include "analyses/steps/profiler_steps.hpp"

namespace stepscope {

namespace {

bool is_number(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

// Counter values grouped by track, read once, with their tracks' names.
class Counters {
 public:
  explicit Counters(const Run& run) : run_(run), by_track_(run) {}

  const std::string& name(CounterTrackId track) const { return run_.strings.get(run_.counter_tracks[track].name); }
  int64_t pid(CounterTrackId track) const { return run_.counter_tracks[track].pid; }
  size_t tracks() const { return by_track_.tracks(); }
  size_t count(CounterTrackId track) const { return by_track_.count(track); }
  // fn(value) for each of the track's values, in the run's order.
  template <class Fn>
  void for_each(CounterTrackId track, Fn fn) const {
    by_track_.for_each(track, fn);
  }

  // The mean and max of one track inside [start, end); nullopt without values there.
  std::optional<std::pair<double, double>> mean_max(CounterTrackId track, int64_t start, int64_t end) const {
    double sum = 0, most = 0;
    size_t n = 0;
    for_each(track, [&](const CounterValue& v) {
      if (v.ts_ns < start || v.ts_ns >= end) return;
      sum += v.value;
      most = n == 0 ? v.value : std::max(most, v.value);
      ++n;
    });
    if (n == 0) return std::nullopt;
    return std::make_pair(sum / static_cast<double>(n), most);
  }

 private:
  const Run& run_;
  CounterValuesByTrack by_track_;
};

// "cpu.3.percent" -> true; "cpu.total.percent" -> false.
bool is_core_track(std::string_view name) {
  if (name.rfind("cpu.", 0) != 0 || name.size() < 13 || name.substr(name.size() - 8) != ".percent") return false;
  return is_number(name.substr(4, name.size() - 12));
}

// "gpu.0.memory_total_bytes" with quantity "memory_total_bytes" -> 0.
std::optional<int> gpu_index(std::string_view name, std::string_view quantity) {
  if (name.rfind("gpu.", 0) != 0 || name.size() <= 5 + quantity.size()) return std::nullopt;
  if (name.substr(name.size() - quantity.size()) != quantity || name[name.size() - quantity.size() - 1] != '.') {
    return std::nullopt;
  }
  std::string_view index = name.substr(4, name.size() - quantity.size() - 5);
  if (!is_number(index)) return std::nullopt;
  return std::stoi(std::string(index));
}

void gather_cpu(const Counters& c, DiagnosisFacts& f) {
  std::map<int64_t, double> idle_by_ts;
  size_t cores = 0;
  for (CounterTrackId t = 0; t < c.tracks(); ++t) {
    if (!is_core_track(c.name(t))) continue;
    ++cores;
    c.for_each(t, [&](const CounterValue& v) {
      if (v.ts_ns >= f.window_start_ns && v.ts_ns < f.window_end_ns) {
        idle_by_ts[v.ts_ns] += std::clamp(100 - v.value, 0.0, 100.0) / 100;
      }
    });
  }
  if (cores == 0) return;
  f.cores = cores;
  if (idle_by_ts.empty()) return;
  double sum = 0;
  for (auto [ts, idle] : idle_by_ts) sum += idle;
  f.idle_cores = sum / static_cast<double>(idle_by_ts.size());
}

void gather_process_cpu(const Counters& c, DiagnosisFacts& f) {
  // A hash set: looked up for every sample of the run but the main thread's.
  std::unordered_set<int64_t> workers(f.worker_pids.begin(), f.worker_pids.end());
  for (CounterTrackId t = 0; t < c.tracks(); ++t) {
    if (c.name(t) != "process.cpu_percent") continue;
    auto stats = c.mean_max(t, f.window_start_ns, f.window_end_ns);
    if (!stats) continue;
    f.tree_cpu_cores = f.tree_cpu_cores.value_or(0) + stats->first / 100;
    if (c.pid(t) == f.primary->pid) f.main_cpu_cores = stats->first / 100;
    if (workers.count(c.pid(t))) f.worker_cpu_cores = f.worker_cpu_cores.value_or(0) + stats->first / 100;
  }
}

void gather_disks(const Counters& c, DiagnosisFacts& f) {
  for (CounterTrackId t = 0; t < c.tracks(); ++t) {
    const std::string& name = c.name(t);
    constexpr std::string_view kSuffix = ".util_percent";
    if (name.rfind("disk.", 0) != 0 || name.size() <= 5 + kSuffix.size() ||
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    if (auto stats = c.mean_max(t, f.window_start_ns, f.window_end_ns)) {
      f.disks.push_back({name.substr(5, name.size() - 5 - kSuffix.size()), stats->first, stats->second});
    }
  }
}

// "process.gpu.3.allocated_bytes" with quantity "allocated_bytes" -> 3.
std::optional<int> process_gpu_index(std::string_view name, std::string_view quantity) {
  constexpr std::string_view kPrefix = "process.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return gpu_index(name.substr(kPrefix.size()), quantity);
}

// Per poll, the sum of a track's values over processes (or the one system
// track): (time, value) sorted by time, one per time. Each track is merged
// in (add_track): a map insert per value was most of the diagnosis' facts
// on an hour's run.
using PerPoll = std::vector<std::pair<int64_t, double>>;

// Adds a track's values to `sum`, summing those at the same time.
void add_track(PerPoll& sum, const Counters& c, CounterTrackId t) {
  PerPoll track;
  track.reserve(c.count(t));
  c.for_each(t, [&](const CounterValue& v) { track.emplace_back(v.ts_ns, v.value); });
  auto by_time = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(track.begin(), track.end(), by_time)) std::stable_sort(track.begin(), track.end(), by_time);
  PerPoll merged;
  merged.reserve(sum.size() + track.size());
  auto add = [&](const std::pair<int64_t, double>& value) {
    if (!merged.empty() && merged.back().first == value.first) {
      merged.back().second += value.second;
    } else {
      merged.push_back(value);
    }
  };
  size_t a = 0, b = 0;
  while (a < sum.size() || b < track.size()) {
    const bool from_sum = b == track.size() || (a < sum.size() && sum[a].first <= track[b].first);
    add(from_sum ? sum[a++] : track[b++]);
  }
  sum.swap(merged);
}

// The value at `ts`, or null.
const double* value_at(const PerPoll& values, int64_t ts) {
  auto it = std::lower_bound(values.begin(), values.end(), ts, [](const auto& v, int64_t t) { return v.first < t; });
  return it != values.end() && it->first == ts ? &it->second : nullptr;
}

// The least room the tree had per poll: the system's available memory and,
// in a limited cgroup, the limit less the working set.
void gather_available(const PerPoll& available, const PerPoll& limit, const PerPoll& working_set, DiagnosisFacts& f) {
  auto note = [&](double bytes, bool cgroup) {
    if (!f.min_memory_available_bytes || bytes < *f.min_memory_available_bytes) {
      f.min_memory_available_bytes = bytes;
      f.min_available_in_cgroup = cgroup;
    }
  };
  for (auto [ts, bytes] : available) note(bytes, false);
  for (auto [ts, bytes] : limit) {
    if (const double* w = value_at(working_set, ts)) note(std::max(0.0, bytes - *w), true);
  }
}

void gather_allocator_peaks(const Counters& c, const std::map<int, double>& capacities, DiagnosisFacts& f) {
  std::map<std::pair<int64_t, int>, DiagnosisFacts::AllocatorPeak> peaks;
  for (CounterTrackId t = 0; t < c.tracks(); ++t) {
    for (std::string_view quantity : {"allocated_bytes", "reserved_bytes"}) {
      auto gpu = process_gpu_index(c.name(t), quantity);
      auto stats = gpu ? c.mean_max(t, INT64_MIN, INT64_MAX) : std::nullopt;
      if (!stats) continue;
      DiagnosisFacts::AllocatorPeak& peak = peaks[{c.pid(t), *gpu}];
      peak.pid = c.pid(t);
      peak.gpu = *gpu;
      (quantity == "allocated_bytes" ? peak.allocated_bytes : peak.reserved_bytes) = stats->second;
    }
  }
  for (auto& [key, peak] : peaks) {
    for (auto [index, bytes] : f.gpu_memory_total_bytes) {
      if (index == peak.gpu) peak.capacity_bytes = bytes;
    }
    if (auto found = capacities.find(peak.gpu); !peak.capacity_bytes && found != capacities.end()) {
      peak.capacity_bytes = found->second;
    }
    f.allocator_peaks.push_back(peak);
  }
}

// Memory is about the whole run: a peak outside the steady window counts.
void gather_memory(const Run& run, const Counters& c, DiagnosisFacts& f) {
  PerPoll used, available, tree_rss, cgroup_limit, working_set;
  const std::map<std::string_view, PerPoll*> sums = {
      {"memory.used_bytes", &used},
      {"memory.available_bytes", &available},
      {"process.rss_bytes", &tree_rss},
      {"cgroup.memory.limit_bytes", &cgroup_limit},
      {"cgroup.memory.working_set_bytes", &working_set}};
  for (CounterTrackId t = 0; t < c.tracks(); ++t) {
    const std::string& name = c.name(t);
    if (auto into = sums.find(name); into != sums.end()) {
      add_track(*into->second, c, t);
    }
    for (auto [quantity, list] : {std::make_pair("memory_total_bytes", &f.gpu_memory_total_bytes),
                                  std::make_pair("memory_used_bytes", &f.gpu_memory_peak_used_bytes)}) {
      if (auto gpu = gpu_index(name, quantity)) {
        auto stats = c.mean_max(t, INT64_MIN, INT64_MAX);
        if (stats) list->emplace_back(*gpu, stats->second);
      }
    }
  }
  for (auto [ts, bytes] : used) {
    if (const double* a = value_at(available, ts)) {
      f.memory_total_bytes = std::max(f.memory_total_bytes.value_or(0), bytes + *a);
    }
  }
  for (auto [ts, bytes] : cgroup_limit) {
    f.cgroup_memory_limit_bytes = std::min(f.cgroup_memory_limit_bytes.value_or(bytes), bytes);
  }
  gather_available(available, cgroup_limit, working_set, f);
  for (auto [ts, bytes] : tree_rss) f.peak_tree_rss_bytes = std::max(f.peak_tree_rss_bytes.value_or(0), bytes);
  gather_allocator_peaks(c, device_memory_capacities(run), f);
}

// The spans of `kinds` on thread (pid, tid), sorted by start: rare kinds,
// which the census lists.
Intervals thread_spans(const Run& run, const SpanCensus& census, std::initializer_list<SpanKind> kinds, int64_t pid,
                       int64_t tid) {
  Intervals out;
  for (SpanKind kind : kinds) {
    for (SpanId id : census.ids(kind)) {
      const Span& s = run.spans[id];
      if (s.pid == pid && s.tid == tid) out.push_back({s.start_ns, s.end_ns});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The main thread's data waits and measured phases, the worker processes
// (their "worker_batch" markers), and the main thread's GC pauses and evaluations.
void gather_spans(const Run& run, const SpanCensus& census, DiagnosisFacts& f) {
  f.main_data_waits = thread_spans(run, census, {SpanKind::kDataWait}, f.primary->pid, f.main_tid);
  f.main_phases = merge_unsorted(thread_spans(
      run, census, {SpanKind::kDataWait, SpanKind::kForward, SpanKind::kBackward, SpanKind::kOptimizer},
      f.primary->pid, f.main_tid));
  std::vector<bool> worker_batch = strings_equal_to(run.strings, "worker_batch");
  std::vector<bool> gc_pause = strings_equal_to(run.strings, "gc_pause");
  std::vector<bool> evaluation = strings_equal_to(run.strings, "evaluation");
  std::set<int64_t> workers;
  for (SpanId id : census.ids(SpanKind::kOther)) {
    const Span& s = run.spans[id];
    if (worker_batch[s.name]) workers.insert(s.pid);
    if (s.pid != f.primary->pid || s.tid != f.main_tid) continue;
    if (evaluation[s.name]) f.main_evaluations.push_back({s.start_ns, s.end_ns});
    int64_t ns = std::min(s.end_ns, f.window_end_ns) - std::max(s.start_ns, f.window_start_ns);
    if (ns < 0 || !gc_pause[s.name]) continue;
    f.main_gc_pauses.push_back({s.start_ns, s.end_ns});
    ++f.gc_pauses;
    f.gc_pause_ns += ns;
    f.gc_longest_ns = std::max(f.gc_longest_ns, ns);
  }
  f.worker_pids.assign(workers.begin(), workers.end());
  f.main_gc_pauses = merge_unsorted(std::move(f.main_gc_pauses));
  f.main_evaluations = merge_unsorted(std::move(f.main_evaluations));
}

void gather_samples(const Run& run, DiagnosisFacts& f) {
  if (run.samples.empty()) return;
  CoverFinder waits(f.main_data_waits);
  // A hash set: looked up for every sample of the run but the main thread's.
  std::unordered_set<int64_t> workers(f.worker_pids.begin(), f.worker_pids.end());
  RecentAnswers<int64_t, bool> recent_worker;
  auto is_worker = [&](int64_t pid) { return workers.count(pid) > 0; };
  f.step_samples.reserve(run.samples.size());  // address space: only what is filled is touched
  for (const Sample& s : run.samples) {
    if (s.stack == StackTree::kRoot || s.ts_ns < f.window_start_ns || s.ts_ns >= f.window_end_ns) continue;
    if (s.pid == f.primary->pid && s.tid == f.main_tid) {
      f.step_samples.push_back(&s);
      if (waits.covers(s.ts_ns)) {
        ++f.data_wait_samples;
        f.data_wait_disk_samples += s.state == ThreadState::kDiskWait;
      }
    } else if (s.state != ThreadState::kIdle && recent_worker.get(s.pid, is_worker)) {
      ++f.worker_busy_samples;
      f.worker_disk_samples += s.state == ThreadState::kDiskWait;
    }
  }
}

// From the input's launches (the device activity in trace order), else from
// a pass over the spans.
Intervals device_busy(const DiagnosisInput& input) {
  const Run& run = input.run;
  Intervals busy;
  if (input.launches) {
    busy.reserve(input.launches->activity().size());
    for (const LaunchedActivity& activity : input.launches->activity()) {
      busy.push_back({run.spans[activity.span].start_ns, run.spans[activity.span].end_ns});
    }
  } else {
    for (const Span& s : run.spans) {
      if (is_device_activity(s.kind)) busy.push_back({s.start_ns, s.end_ns});
    }
  }
  return merge_unsorted(std::move(busy));
}

}  // namespace

std::optional<double> DiagnosisFacts::host_memory_capacity() const {
  if (memory_total_bytes && cgroup_memory_limit_bytes) return std::min(*memory_total_bytes, *cgroup_memory_limit_bytes);
  return memory_total_bytes ? memory_total_bytes : cgroup_memory_limit_bytes;
}

bool DiagnosisFacts::capacity_is_cgroup_limit() const {
  return cgroup_memory_limit_bytes && (!memory_total_bytes || *cgroup_memory_limit_bytes < *memory_total_bytes);
}

double DiagnosisFacts::sample_share(uint64_t samples) const {
  return step_samples.empty() ? 0 : static_cast<double>(samples) / static_cast<double>(step_samples.size());
}

DiagnosisFacts gather_diagnosis_facts(const DiagnosisInput& input) {
  DiagnosisFacts f;
  f.device_busy = device_busy(input);
  Counters counters(input.run);
  gather_memory(input.run, counters, f);
  if (input.steps.empty()) return f;
  const ProcessSteps& p = input.steps.processes[input.steps.primary];
  if (p.steps.empty()) return f;
  f.primary = &p;
  size_t first = std::min(p.warmup_steps, p.steps.size() - 1);
  f.main_tid = p.steps.back().tid;
  f.window_start_ns = p.steps[first].start_ns;
  f.window_end_ns = p.steps.back().end_ns;
  for (size_t i = first; i < p.steps.size(); ++i) f.steady_ns += p.steps[i].time_ns();
  if (input.host_spans) {  // diagnose sees to it
    gather_spans(input.run, input.host_spans->census(), f);
  } else {
    gather_spans(input.run, SpanCensus(input.run), f);
  }
  gather_cpu(counters, f);
  gather_process_cpu(counters, f);
  gather_disks(counters, f);
  gather_samples(input.run, f);
  return f;
}

StackFrameFinder::StackFrameFinder(const Run& run, std::function<bool(const Frame&)> matches)
    : run_(run),
      matches_(std::move(matches)),
      frame_state_(run.frames.size(), 0),
      stack_answer_(run.stacks.size(), kUnknown) {
  if (!stack_answer_.empty()) stack_answer_[StackTree::kRoot] = kNone;
}

bool StackFrameFinder::frame_matches(FrameId frame) {
  if (frame_state_[frame] == 0) frame_state_[frame] = matches_(run_.frames.get(frame)) ? 2 : 1;
  return frame_state_[frame] == 2;
}

FrameId StackFrameFinder::find(StackId stack) {
  if (stack >= stack_answer_.size()) return kNone;
  // Up to the nearest stack with a known answer, then back down.
  std::vector<StackId> pending;
  for (StackId id = stack; stack_answer_[id] == kUnknown; id = run_.stacks.node(id).parent) pending.push_back(id);
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
    const StackNode& node = run_.stacks.node(*it);
    stack_answer_[*it] = frame_matches(node.frame) ? node.frame : stack_answer_[node.parent];
  }
  return stack_answer_[stack];
}

bool frame_file_contains(const Run& run, const Frame& frame, const std::vector<std::string_view>& needles) {
  const std::string& file = run.strings.get(frame.file);
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return file.find(n) != std::string::npos; });
}

std::string percent_text(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

std::string speedup_text(double speedup) { return fmt::format("{:.2f}x", speedup); }

Intervals step_windows(const Run& run, const DiagnosisFacts& f) {
  Intervals out;
  if (f.primary) {
    for (size_t i = f.primary->warmup_steps; i < f.primary->steps.size(); ++i) {
      out.push_back({f.primary->steps[i].start_ns, f.primary->steps[i].end_ns});
    }
    return out;
  }
  for (const Span* s : profiler_step_spans(run)) out.push_back({s->start_ns, s->end_ns});
  std::sort(out.begin(), out.end());
  return out;
}

std::string top_counts(const std::map<std::string, size_t>& counts, size_t top) {
  std::vector<std::pair<std::string, size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < top; ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("{} ({}x)", sorted[i].first, sorted[i].second);
  }
  return text;
}

}  // namespace stepscope
