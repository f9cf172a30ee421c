#include "renderers/export/speedscope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyses/spans/span_index.hpp"
#include "renderers/escape.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

using ThreadKey = std::pair<int64_t, int64_t>;

// JSON text written to the stream in chunks, so a long recording never
// needs the whole file in memory.
class JsonOut {
 public:
  explicit JsonOut(std::ostream& out) : out_(out) {}
  std::string& text() { return text_; }
  void flush_if_large() {
    if (text_.size() >= kChunkBytes) flush();
  }
  void flush() {
    out_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
  }

 private:
  static constexpr size_t kChunkBytes = 1 << 20;
  std::ostream& out_;
  std::string text_;
};

template <typename... Args>
void append(std::string& json, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(json), format, std::forward<Args>(args)...);
}

void append_frames(JsonOut& out, const Run& run, const FrameTable& frames) {
  std::string& json = out.text();
  json += "\"shared\":{\"frames\":[";
  for (size_t id = 0; id < frames.size(); ++id) {
    const Frame& frame = frames.get(static_cast<FrameId>(id));
    if (id != 0) json += ',';
    json += "{\"name\":";
    append_json_string(json, frame_label(run.strings, frame));
    const std::string& file = run.strings.get(frame.file);
    if (!file.empty()) {
      json += ",\"file\":";
      append_json_string(json, file);
    }
    if (frame.line != 0) append(json, ",\"line\":{}", frame.line);
    json += '}';
    out.flush_if_large();
  }
  json += "]}";
}

// Everything of a profile object up to its samples or events.
void append_profile_head(std::string& json, const Run& run, const ThreadProfile& thread,
                         std::string_view type, int64_t start_ns, int64_t end_ns) {
  append(json, "{{\"type\":\"{}\",\"name\":", type);
  append_json_string(json, process_label(run, thread.pid) + " / " +
                               thread_label(run, thread.pid, thread.tid));
  append(json, ",\"unit\":\"nanoseconds\",\"startValue\":{},\"endValue\":{},", start_ns, end_ns);
}

// ---- sampled runs ----

// Each thread's samples of the profile (busy ones, idle ones too with --idle,
// inside the window), in time order.
std::map<ThreadKey, std::vector<const Sample*>> samples_in_time_order(const Run& run, const ProfileOptions& options) {
  std::map<ThreadKey, std::vector<const Sample*>> by_thread;
  for (const Sample& sample : run.samples) {
    if (sample_in_profile(sample, options)) by_thread[{sample.pid, sample.tid}].push_back(&sample);
  }
  for (auto& [key, samples] : by_thread) {
    std::stable_sort(samples.begin(), samples.end(),
                     [](const Sample* a, const Sample* b) { return a->ts_ns < b->ts_ns; });
  }
  return by_thread;
}

// The JSON array of a stack's frame indexes, root first; a recording has
// many samples per stack, so each array is built once.
class StackArrays {
 public:
  explicit StackArrays(const StackTree& stacks) : stacks_(stacks) {}
  const std::string& get(StackId stack) {
    auto [it, inserted] = arrays_.try_emplace(stack);
    if (inserted) it->second = build(stack);
    return it->second;
  }

 private:
  std::string build(StackId stack) const {
    std::string array = "[";
    for (FrameId frame : stacks_.frames(stack)) {
      if (array.size() > 1) array += ',';
      append(array, "{}", frame);
    }
    array += ']';
    return array;
  }
  const StackTree& stacks_;
  std::unordered_map<StackId, std::string> arrays_;
};

// A stack and how many samples in a row had it.
struct StackRun {
  StackId stack;
  int64_t samples;
};

// Consecutive samples of one stack become one sample of their summed weight:
// speedscope lays samples end to end by weight, so every view shows the same,
// and an hour's file is several times smaller.
std::vector<StackRun> stack_runs(const std::vector<const Sample*>& samples) {
  std::vector<StackRun> runs;
  for (const Sample* sample : samples) {
    if (!runs.empty() && runs.back().stack == sample->stack) {
      ++runs.back().samples;
    } else {
      runs.push_back({sample->stack, 1});
    }
  }
  return runs;
}

void append_sampled_profile(JsonOut& out, const Run& run, const ThreadProfile& thread,
                            const std::vector<const Sample*>& samples, int64_t run_start_ns,
                            int64_t period_ns, StackArrays& stack_arrays) {
  int64_t start_ns = samples.front()->ts_ns - run_start_ns;
  int64_t end_ns = start_ns + period_ns * static_cast<int64_t>(samples.size());
  append_profile_head(out.text(), run, thread, "sampled", start_ns, end_ns);
  const std::vector<StackRun> runs = stack_runs(samples);
  out.text() += "\"samples\":[";
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i != 0) out.text() += ',';
    out.text() += stack_arrays.get(runs[i].stack);
    out.flush_if_large();
  }
  out.text() += "],\"weights\":[";
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i != 0) out.text() += ',';
    append(out.text(), "{}", period_ns * runs[i].samples);
    out.flush_if_large();
  }
  out.text() += "]}";
}

void append_sampled_profiles(JsonOut& out, const Run& run, const Profile& profile, const ProfileOptions& options) {
  // build_profile has already refused sampled runs without a valid period.
  const int64_t period_ns = run.sample_period_ns().value_or(1);
  auto by_thread = samples_in_time_order(run, options);
  int64_t run_start_ns = run.samples.front().ts_ns;
  for (const Sample& sample : run.samples) run_start_ns = std::min(run_start_ns, sample.ts_ns);
  StackArrays stack_arrays(profile.stacks());
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    const ThreadProfile& thread = profile.threads[i];
    if (i != 0) out.text() += ',';
    append_sampled_profile(out, run, thread, by_thread.at({thread.pid, thread.tid}), run_start_ns,
                           period_ns, stack_arrays);
  }
}

// ---- span-only runs ----

struct FrameEvent {
  bool open = true;
  int64_t at_ns = 0;
  FrameId frame = 0;
};

// Open and close events that nest, as speedscope requires (each close
// matches the innermost open frame). A span that outlives its parent keeps
// its place under it, as in the stack profile, and the parent's close waits
// for it: no time is dropped and the events still nest.
std::vector<FrameEvent> nested_events(const Run& run, std::span<const HostSpan> spans, const SpanFrameName& frame_name,
                                      const std::unordered_map<StringId, FrameId>& frame_of_name) {
  struct Open {
    int64_t end_ns;
    FrameId frame;
  };
  std::vector<FrameEvent> events;
  std::vector<Open> open;
  auto close_top = [&] {
    Open top = open.back();
    open.pop_back();
    events.push_back({false, top.end_ns, top.frame});
    if (!open.empty()) open.back().end_ns = std::max(open.back().end_ns, top.end_ns);
  };
  for (const HostSpan& host : spans) {
    const Span* span = &run.spans[host.id];
    if (span->end_ns < span->start_ns) continue;  // as the stack profile: no time, no frame
    while (!open.empty() && open.back().end_ns <= span->start_ns) close_top();
    FrameId frame = frame_of_name.at(frame_name(span->name));
    events.push_back({true, span->start_ns, frame});
    open.push_back({span->end_ns, frame});
  }
  while (!open.empty()) close_top();
  return events;
}

void append_evented_profile(JsonOut& out, const Run& run, const ThreadProfile& thread,
                            const std::vector<FrameEvent>& events, int64_t run_start_ns) {
  int64_t start_ns = events.front().at_ns - run_start_ns;
  int64_t end_ns = start_ns;
  for (const FrameEvent& event : events) end_ns = std::max(end_ns, event.at_ns - run_start_ns);
  append_profile_head(out.text(), run, thread, "evented", start_ns, end_ns);
  out.text() += "\"events\":[";
  for (size_t i = 0; i < events.size(); ++i) {
    const FrameEvent& event = events[i];
    append(out.text(), "{}{{\"type\":\"{}\",\"at\":{},\"frame\":{}}}", i == 0 ? "" : ",",
           event.open ? 'O' : 'C', event.at_ns - run_start_ns, event.frame);
    out.flush_if_large();
  }
  out.text() += "]}";
}

void append_evented_profiles(JsonOut& out, const Run& run, const Profile& profile) {
  // The span profile names each frame after its span (SpanFrameName).
  SpanFrameName frame_name(run.strings);
  std::unordered_map<StringId, FrameId> frame_of_name;
  const auto& frames = profile.frames().all();
  for (size_t id = 0; id < frames.size(); ++id) {
    frame_of_name.emplace(frames[id].function, static_cast<FrameId>(id));
  }
  HostSpansByThread host_spans(run);
  std::map<ThreadKey, std::span<const HostSpan>> spans_of;
  int64_t run_start_ns = std::numeric_limits<int64_t>::max();
  for (const HostSpansByThread::Thread& t : host_spans.threads()) {
    spans_of[{t.pid, t.tid}] = t.spans;
    for (const HostSpan& span : t.spans) {
      if (span.end_ns >= span.start_ns) run_start_ns = std::min(run_start_ns, span.start_ns);
    }
  }
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    const ThreadProfile& thread = profile.threads[i];
    if (i != 0) out.text() += ',';
    auto events = nested_events(run, spans_of.at({thread.pid, thread.tid}), frame_name, frame_of_name);
    append_evented_profile(out, run, thread, events, run_start_ns);
  }
}

size_t heaviest_thread(const Profile& profile) {
  size_t heaviest = 0;
  for (size_t i = 1; i < profile.threads.size(); ++i) {
    if (profile.threads[i].total_ns() > profile.threads[heaviest].total_ns()) heaviest = i;
  }
  return heaviest;
}

std::string file_name(const Run& run) {
  if (run.processes.empty()) return "stepscope";
  return "stepscope: " + process_label(run, run.processes.front().pid);
}

}  // namespace

void write_speedscope(const Run& run, const Profile& profile, const ProfileOptions& options, std::ostream& out) {
  JsonOut json(out);
  json.text() +=
      "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
      "\"exporter\":\"stepscope@" STEPSCOPE_VERSION "\",\"name\":";
  append_json_string(json.text(), file_name(run));
  append(json.text(), ",\"activeProfileIndex\":{},", heaviest_thread(profile));
  append_frames(json, run, profile.frames());
  json.text() += ",\"profiles\":[";
  if (profile.source == ProfileSource::kSamples) append_sampled_profiles(json, run, profile, options);
  if (profile.source == ProfileSource::kSpans) append_evented_profiles(json, run, profile);
  json.text() += "]}\n";
  json.flush();
}

}  // namespace stepscope
