// Small Runs for renderer tests, full of names that try to break every
// output format, and helpers to check what the renderers wrote.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope::fixtures {

inline constexpr int64_t kSamplePeriodNs = 10'000'000;

// Each tries another way out: quotes, markup, CDATA end, bytes that are not
// UTF-8, the collapsed separators, control characters, backslashes.
inline const char* const kScriptName = "<script>alert(1)</script>";
inline const char* const kHostileCommand =
    "evil \"cmd\" 'x' <script>alert(1)</script> ]]> \xff\xfe;semi\\back\nline &amp;";

inline void add_samples(Run& run, int32_t pid, int32_t tid, const std::vector<FrameId>& stack,
                        int count, int64_t& next_ts) {
  StackId id = run.stacks.intern(stack);
  for (int i = 0; i < count; ++i) {
    run.samples.push_back({next_ts, pid, tid, id, ThreadState::kRunning});
    next_ts += kSamplePeriodNs;
  }
}

// Two processes, three threads, 25 samples. Samples are not stored in time
// order (collectors may interleave), and one has an empty stack.
inline Run sampled_run() {
  Run run;
  run.metadata["sample_period_ns"] = std::to_string(kSamplePeriodNs);
  run.add_process(100, "python train.py");
  run.add_process(200, kHostileCommand, 100);
  run.add_thread(100, 100, "MainThread");
  run.add_thread(100, 101, "pt_data_worker;0 <b>\"w\"</b>");
  run.add_thread(200, 201, "");

  FrameId module = run.intern_frame("<module>", "train.py", 1);
  FrameId train = run.intern_frame("train", "train.py", 10);
  FrameId step = run.intern_frame("step", "train.py", 20);
  FrameId script = run.intern_frame(kScriptName, "evil]]>.py", 7);
  FrameId bad_bytes = run.intern_frame("bad\xff\xfe", "", 0);
  FrameId semicolon = run.intern_frame("semi;colon and space", "dir with space/a;b.py", 0);
  FrameId newline = run.intern_frame("new\nline\\back\tslash", "x.py", 3);
  FrameId native = run.intern_frame("at::native::add", "libtorch.so", 0, FrameKind::kNative);
  FrameId gc = run.intern_frame("<GC>", "", 0, FrameKind::kMarker);
  FrameId unicode = run.intern_frame("donn\xc3\xa9""es_\xe6\x97\xa5\xe6\x9c\xac", "\xc3\xbc.py", 5);

  int64_t ts = 5'000'000'000;
  // Thread 101 first, though its samples come later in time.
  int64_t late_ts = ts + 1'000 * kSamplePeriodNs;
  add_samples(run, 100, 101, {bad_bytes}, 4, late_ts);
  add_samples(run, 100, 101, {semicolon, newline}, 2, late_ts);
  add_samples(run, 100, 101, {unicode}, 1, late_ts);
  add_samples(run, 100, 101, {}, 1, late_ts);
  add_samples(run, 100, 100, {module, train, step}, 5, ts);
  add_samples(run, 100, 100, {module, train, step, native}, 3, ts);
  add_samples(run, 100, 100, {module, train, gc}, 2, ts);
  add_samples(run, 100, 100, {module, script}, 1, ts);
  add_samples(run, 100, 100, {module}, 1, ts);
  add_samples(run, 200, 201, {script, semicolon}, 3, ts);
  add_samples(run, 200, 201, {module, train}, 2, ts);
  return run;
}

inline void add_span(Run& run, int64_t tid, SpanKind kind, std::string_view name, int64_t start_us,
                     int64_t end_us) {
  run.spans.push_back({start_us * 1000, end_us * 1000, 10, tid, kind, run.strings.intern(name)});
}

// Spans only (an imported trace): nested host spans on two threads, one
// span that outlives its parent, zero and sub-microsecond spans, and device
// activity that the stack profile leaves out. Times start at 1 s.
inline Run span_run() {
  Run run;
  run.metadata["clock"] = "trace";
  run.add_process(10, "python infer.py");
  run.add_thread(10, 10, "MainThread");
  run.add_thread(10, 11, kScriptName);
  const int64_t t = 1'000'000;  // us
  add_span(run, 10, SpanKind::kStep, "step 1", t, t + 1000);
  add_span(run, 10, SpanKind::kForward, "forward;fwd", t + 100, t + 400);
  add_span(run, 10, SpanKind::kCpuOp, "aten::mm <&> \xff", t + 150, t + 250);
  add_span(run, 10, SpanKind::kBackward, "backward\n", t + 400, t + 900);
  add_span(run, 10, SpanKind::kOptimizer, "optimizer", t + 900, t + 1000);
  add_span(run, 10, SpanKind::kStep, "step 2", t + 1000, t + 2000);
  add_span(run, 10, SpanKind::kUserRange, "]]>", t + 1200, t + 1200);  // zero length
  run.spans.push_back({(t + 1300) * 1000, (t + 1300) * 1000 + 400, 10, 10, SpanKind::kCpuOp,
                       run.strings.intern("tiny")});  // rounds to 0 us
  add_span(run, 11, SpanKind::kUserRange, kScriptName, t + 50, t + 550);
  add_span(run, 11, SpanKind::kUserRange, "outlives;parent", t + 450, t + 850);
  run.spans.push_back({t * 1000, (t + 5000) * 1000, 10, 7, SpanKind::kKernel,
                       run.strings.intern("kernel")});  // device activity
  return run;
}

inline bool valid_utf8(std::string_view text) {
  return simdjson::validate_utf8(text.data(), text.size());
}

inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      parts.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace stepscope::fixtures
