#include "renderers/export/speedscope.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyses/profile.hpp"
#include "renderers/escape.hpp"
#include "run/frame_label.hpp"
#include "run/profiler_step_name.hpp"
#include "run_fixtures.hpp"

namespace stepscope {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;
using Path = std::vector<std::string>;

std::string render(const Run& run, const ProfileOptions& options = {}) {
  std::ostringstream out;
  write_speedscope(run, build_profile(run, options), options, out);
  return out.str();
}

template <typename T>
T get(simdjson::simdjson_result<element> result) {
  T value;
  auto error = result.get(value);
  if (error) throw std::runtime_error(simdjson::error_message(error));
  return value;
}

template <typename T>
T get(element item) {
  T value;
  auto error = item.get(value);
  if (error) throw std::runtime_error(simdjson::error_message(error));
  return value;
}

// Parses (which also validates the UTF-8) and checks the file-level schema.
class SpeedscopeFile {
 public:
  explicit SpeedscopeFile(const std::string& text) : root_(parser_.parse(text).value()) {
    EXPECT_EQ(get<std::string_view>(root_["$schema"]),
              "https://www.speedscope.app/file-format-schema.json");
    EXPECT_EQ(get<std::string_view>(root_["exporter"]).rfind("stepscope@", 0), 0u);
    EXPECT_FALSE(get<std::string_view>(root_["name"]).empty());
    for (element frame : get<array>(root_["shared"]["frames"])) {
      names_.emplace_back(get<std::string_view>(frame["name"]));
    }
  }
  element root() const { return root_; }
  array profiles() const { return get<array>(root_["profiles"]); }
  const std::vector<std::string>& frame_names() const { return names_; }
  const std::string& frame_name(int64_t index) const {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, static_cast<int64_t>(names_.size()));
    return names_.at(static_cast<size_t>(index));
  }

 private:
  simdjson::dom::parser parser_;
  element root_;
  std::vector<std::string> names_;
};

// The names of a run's thread as its frames are labelled in the file.
Path stack_names(const Run& run, const FrameTable& frames, const StackTree& stacks, StackId stack) {
  Path path;
  for (FrameId frame : stacks.frames(stack)) {
    path.push_back(printable_utf8(frame_label(run.strings, frames.get(frame))));
  }
  return path;
}

std::string profile_name(const Run& run, int64_t pid, int64_t tid) {
  return printable_utf8(process_label(run, pid) + " / " + thread_label(run, pid, tid));
}

TEST(Speedscope, SampledRunGivesOneSampledProfilePerThread) {
  stepscope::Run run = fixtures::sampled_run();
  std::string text = render(run);
  SpeedscopeFile file(text);
  EXPECT_EQ(file.frame_names().size(), run.frames.size());
  EXPECT_EQ(get<int64_t>(file.root()["activeProfileIndex"]), 0);
  const std::vector<std::pair<int64_t, int64_t>> threads = {{100, 100}, {100, 101}, {200, 201}};
  const std::vector<int64_t> counts = {12, 8, 5};
  const std::vector<size_t> stack_runs = {5, 4, 2};  // consecutive samples of one stack are one
  ASSERT_EQ(file.profiles().size(), 3u);
  size_t i = 0;
  for (element profile : file.profiles()) {
    EXPECT_EQ(get<std::string_view>(profile["type"]), "sampled");
    EXPECT_EQ(get<std::string_view>(profile["unit"]), "nanoseconds");
    EXPECT_EQ(get<std::string_view>(profile["name"]),
              profile_name(run, threads[i].first, threads[i].second));
    array samples = get<array>(profile["samples"]);
    array weights = get<array>(profile["weights"]);
    ASSERT_EQ(samples.size(), stack_runs[i]);
    ASSERT_EQ(weights.size(), samples.size());
    int64_t weight_sum = 0;
    for (element weight : weights) weight_sum += get<int64_t>(weight);
    EXPECT_EQ(weight_sum, counts[i] * fixtures::kSamplePeriodNs);
    EXPECT_EQ(get<int64_t>(profile["endValue"]) - get<int64_t>(profile["startValue"]), weight_sum);
    for (element sample : samples) {
      for (element frame : get<array>(sample)) file.frame_name(get<int64_t>(frame));
    }
    ++i;
  }
}

TEST(Speedscope, SamplesAreInTimeOrderRelativeToTheFirstSample) {
  stepscope::Run run = fixtures::sampled_run();
  SpeedscopeFile file(render(run));
  std::vector<const Sample*> expected;
  for (const Sample& sample : run.samples) {
    if (sample.tid == 101) expected.push_back(&sample);
  }
  std::stable_sort(expected.begin(), expected.end(),
                   [](const Sample* a, const Sample* b) { return a->ts_ns < b->ts_ns; });
  element profile = file.profiles().at(1).value();
  EXPECT_EQ(get<int64_t>(profile["startValue"]), 1000 * fixtures::kSamplePeriodNs);
  EXPECT_EQ(get<int64_t>(file.profiles().at(0).value()["startValue"]), 0);
  // Each sample stands for weight / period samples of its stack in a row.
  size_t i = 0;
  array weights = get<array>(profile["weights"]);
  auto weight = weights.begin();
  for (element sample : get<array>(profile["samples"])) {
    Path names;
    for (element frame : get<array>(sample)) names.push_back(file.frame_name(get<int64_t>(frame)));
    for (int64_t n = get<int64_t>(*weight) / fixtures::kSamplePeriodNs; n > 0; --n, ++i) {
      EXPECT_EQ(names, stack_names(run, run.frames, run.stacks, expected.at(i)->stack)) << i;
    }
    ++weight;
  }
  EXPECT_EQ(i, expected.size());
}

// The samples of the profile, as the other exports: idle ones only when asked
// for, and only those inside the window.
TEST(Speedscope, SampledProfilesHoldTheProfilesSamples) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(fixtures::kSamplePeriodNs);
  run.add_process(100, "python train.py");
  run.add_thread(100, 100, "MainThread");
  FrameId work = run.intern_frame("work", "train.py", 1);
  FrameId wait = run.intern_frame("wait", "train.py", 2);
  int64_t ts = 1'000'000'000;
  fixtures::add_samples(run, 100, 100, {work}, 3, ts);
  const int64_t idle_from = ts;
  fixtures::add_samples(run, 100, 100, {wait}, 4, ts);
  for (Sample& s : run.samples) {
    if (s.ts_ns >= idle_from) s.state = ThreadState::kIdle;
  }
  fixtures::add_samples(run, 100, 100, {work}, 2, ts);
  auto weights_of = [&](const ProfileOptions& options) {
    SpeedscopeFile file(render(run, options));
    std::vector<int64_t> weights;
    for (element w : get<array>(file.profiles().at(0).value()["weights"])) {
      weights.push_back(get<int64_t>(w) / fixtures::kSamplePeriodNs);
    }
    return weights;
  };
  // Busy only: the two runs of `work` meet, and are one sample.
  EXPECT_EQ(weights_of({}), (std::vector<int64_t>{5}));
  ProfileOptions idle;
  idle.include_idle = true;
  EXPECT_EQ(weights_of(idle), (std::vector<int64_t>{3, 4, 2}));
  ProfileOptions window = idle;
  window.from_ns = 1'000'000'000 + 2 * fixtures::kSamplePeriodNs;
  window.to_ns = 1'000'000'000 + 5 * fixtures::kSamplePeriodNs;
  EXPECT_EQ(weights_of(window), (std::vector<int64_t>{1, 2}));
}

TEST(Speedscope, HostileNamesStayInertText) {
  stepscope::Run run = fixtures::sampled_run();
  std::string text = render(run);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('\n'), text.size() - 1);
  SpeedscopeFile file(text);
  const auto& names = file.frame_names();
  auto has = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_TRUE(has("<script>alert(1)</script> (evil]]>.py:7)"));
  EXPECT_TRUE(has("bad\\xFF\\xFE"));
  EXPECT_TRUE(has("new\\x0Aline\\back\\x09slash (x.py:3)"));
  EXPECT_TRUE(has("at::native::add (libtorch.so)"));
  EXPECT_TRUE(has("donn\xc3\xa9""es_\xe6\x97\xa5\xe6\x9c\xac (\xc3\xbc.py:5)"));
  element hostile = file.profiles().at(2).value();
  EXPECT_EQ(get<std::string_view>(hostile["name"]), profile_name(run, 200, 201));
}

TEST(Speedscope, FramesCarryFileAndLineWhenKnown) {
  SpeedscopeFile file(render(fixtures::sampled_run()));
  for (element frame : get<array>(file.root()["shared"]["frames"])) {
    std::string_view name = get<std::string_view>(frame["name"]);
    if (name == "train (train.py:10)") {
      EXPECT_EQ(get<std::string_view>(frame["file"]), "train.py");
      EXPECT_EQ(get<int64_t>(frame["line"]), 10);
    }
    if (name == "<GC>") {
      EXPECT_EQ(frame["file"].error(), simdjson::NO_SUCH_FIELD);
      EXPECT_EQ(frame["line"].error(), simdjson::NO_SUCH_FIELD);
    }
  }
}

TEST(Speedscope, ShowsTheHeaviestThreadFirst) {
  stepscope::Run run = fixtures::sampled_run();
  int64_t ts = 0;
  fixtures::add_samples(run, 200, 201, {}, 20, ts);
  SpeedscopeFile file(render(run));
  EXPECT_EQ(get<int64_t>(file.root()["activeProfileIndex"]), 2);
}

// Replays a thread's events, checking they nest, and returns the self time
// of each stack.
std::map<Path, int64_t> replay(const SpeedscopeFile& file, element profile) {
  std::map<Path, int64_t> self_ns;
  Path open;
  int64_t last_at = get<int64_t>(profile["startValue"]);
  const int64_t end = get<int64_t>(profile["endValue"]);
  for (element event : get<array>(profile["events"])) {
    int64_t at = get<int64_t>(event["at"]);
    EXPECT_GE(at, last_at);
    EXPECT_LE(at, end);
    if (!open.empty()) self_ns[open] += at - last_at;
    last_at = at;
    const std::string& name = file.frame_name(get<int64_t>(event["frame"]));
    if (get<std::string_view>(event["type"]) == "O") {
      open.push_back(name);
    } else {
      EXPECT_EQ(get<std::string_view>(event["type"]), "C");
      EXPECT_FALSE(open.empty());
      if (open.empty()) break;
      EXPECT_EQ(open.back(), name) << "close does not match the innermost open frame";
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty());
  std::erase_if(self_ns, [](const auto& entry) { return entry.second == 0; });
  return self_ns;
}

TEST(Speedscope, SpanRunGivesNestedEventsMatchingTheProfile) {
  stepscope::Run run = fixtures::span_run();
  Profile profile = build_profile(run);
  SpeedscopeFile file(render(run));
  ASSERT_EQ(file.profiles().size(), profile.threads.size());
  ASSERT_EQ(profile.threads.size(), 2u);
  const std::vector<int64_t> starts = {0, 50'000};
  size_t i = 0;
  for (element thread_profile : file.profiles()) {
    const ThreadProfile& thread = profile.threads[i];
    EXPECT_EQ(get<std::string_view>(thread_profile["type"]), "evented");
    EXPECT_EQ(get<std::string_view>(thread_profile["unit"]), "nanoseconds");
    EXPECT_EQ(get<std::string_view>(thread_profile["name"]),
              profile_name(run, thread.pid, thread.tid));
    EXPECT_EQ(get<int64_t>(thread_profile["startValue"]), starts[i]);
    std::map<Path, int64_t> expected;
    for (const StackWeight& stack : thread.stacks) {
      if (stack.weight_ns == 0) continue;
      expected[stack_names(run, profile.frames(), profile.stacks(), stack.stack)] = stack.weight_ns;
    }
    EXPECT_EQ(replay(file, thread_profile), expected) << "thread " << thread.tid;
    ++i;
  }
}

// The evented profile names its frames as the span profile does: both steps
// open the one ProfilerStep* frame.
TEST(Speedscope, ProfilerStepsOpenTheirGroupFrame) {
  stepscope::Run run;
  run.spans.push_back({0, 10, 1, 1, SpanKind::kUserRange, run.strings.intern("ProfilerStep#3")});
  run.spans.push_back({10, 30, 1, 1, SpanKind::kUserRange, run.strings.intern("ProfilerStep#4")});
  add_profiler_step_group(run.strings);
  SpeedscopeFile file(render(run));
  EXPECT_EQ(file.frame_names(), std::vector<std::string>{"ProfilerStep*"});
  ASSERT_EQ(file.profiles().size(), 1u);
  EXPECT_EQ(replay(file, file.profiles().at(0)), (std::map<Path, int64_t>{{{"ProfilerStep*"}, 30}}));
}

TEST(Speedscope, EmptyRunIsStillAValidFile) {
  stepscope::Run run;
  SpeedscopeFile file(render(run));
  EXPECT_EQ(file.profiles().size(), 0u);
}

}  // namespace
}  // namespace stepscope
