#include "renderers/export/pprof.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyses/profile.hpp"
#include "run_fixtures.hpp"
#include "src/renderers/export/pprof_profile.pb.h"

namespace stepscope {
namespace {

namespace pb = perftools::profiles;

std::string gunzip(const std::string& gzipped) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzipped.data()));
  stream.avail_in = static_cast<uInt>(gzipped.size());
  std::string out;
  char buffer[4096];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END);
  inflateEnd(&stream);
  return out;
}

const std::string& text(const pb::Profile& p, int64_t index) { return p.string_table(static_cast<int>(index)); }

pb::Profile render(const Run& run) {
  ProfileOptions options;
  std::ostringstream out;
  write_pprof(run, build_profile(run, options), options, out);
  pb::Profile profile;
  EXPECT_TRUE(profile.ParseFromString(gunzip(out.str())));
  return profile;
}

// A sample's labels, key to value (numbers as text).
std::map<std::string, std::string> labels(const pb::Profile& p, const pb::Sample& s) {
  std::map<std::string, std::string> out;
  for (const pb::Label& label : s.label()) {
    out[text(p, label.key())] = label.str() ? text(p, label.str()) : std::to_string(label.num());
  }
  return out;
}

// A sample's function names, root first (the format lists the leaf first).
std::vector<std::string> stack(const pb::Profile& p, const pb::Sample& s) {
  std::vector<std::string> names;
  for (auto id = s.location_id().rbegin(); id != s.location_id().rend(); ++id) {
    const pb::Location& location = p.location(static_cast<int>(*id - 1));
    EXPECT_EQ(location.id(), *id);
    const pb::Function& function = p.function(static_cast<int>(location.line(0).function_id() - 1));
    names.push_back(text(p, function.name()));
  }
  return names;
}

TEST(Pprof, SampledRunKeepsEverySampleTheirStacksAndThreads) {
  stepscope::Run run = fixtures::sampled_run();
  pb::Profile p = render(run);
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(text(p, 0), "");
  EXPECT_EQ(text(p, p.sample_type(0).type()), "samples");
  EXPECT_EQ(text(p, p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(p.period(), fixtures::kSamplePeriodNs);
  std::map<std::string, int64_t> per_thread;
  int64_t total = 0;
  for (const pb::Sample& s : p.sample()) {
    ASSERT_EQ(s.value_size(), 2);
    EXPECT_EQ(s.value(1), s.value(0) * fixtures::kSamplePeriodNs);
    total += s.value(0);
    per_thread[labels(p, s).at("thread")] += s.value(0);
    EXPECT_EQ(labels(p, s).count("phase"), 0u);  // no steps in this run
  }
  EXPECT_EQ(total, 25);
  EXPECT_EQ(per_thread["thread 100 \"MainThread\""], 12);
  EXPECT_EQ(per_thread["thread 201"], 5);
  bool found = false;
  for (const pb::Sample& s : p.sample()) {
    if (stack(p, s) == std::vector<std::string>{"<module>", "train", "step", "at::native::add"}) {
      found = true;
      EXPECT_EQ(s.value(0), 3);
      EXPECT_EQ(labels(p, s).at("pid"), "100");
      EXPECT_EQ(labels(p, s).at("process"), "process 100 \"python train.py\"");
    }
  }
  EXPECT_TRUE(found);
}

TEST(Pprof, StringsAreValidUtf8AndFramesKeepFileAndLine) {
  pb::Profile p = render(fixtures::sampled_run());
  for (const std::string& string : p.string_table()) {
    EXPECT_TRUE(fixtures::valid_utf8(string)) << string;
    EXPECT_EQ(string.find('\n'), std::string::npos) << string;
  }
  bool bad_bytes = false, newline = false;
  for (const pb::Function& f : p.function()) {
    bad_bytes |= text(p, f.name()) == "bad\\xFF\\xFE";
    if (text(p, f.name()) == "new\\x0Aline\\back\\x09slash") {
      newline = true;
      EXPECT_EQ(text(p, f.filename()), "x.py");
    }
  }
  EXPECT_TRUE(bad_bytes);
  EXPECT_TRUE(newline);
  for (const pb::Location& location : p.location()) {
    const pb::Function& f = p.function(static_cast<int>(location.line(0).function_id() - 1));
    if (text(p, f.name()) == "step") {
      EXPECT_EQ(location.line(0).line(), 20);
    }
  }
}

// Samples of a step thread carry their step phase, and the process its rank.
TEST(Pprof, LabelsStepPhasesAndRanks) {
  stepscope::Run run;
  run.metadata["sample_period_ns"] = std::to_string(fixtures::kSamplePeriodNs);
  run.metadata["hooks.100.rank"] = "3";
  run.add_process(100, "python train.py");
  FrameId loop = run.intern_frame("loop", "train.py", 5);
  const int64_t ms = 1'000'000;
  for (int step = 0; step < 4; ++step) {
    int64_t t = step * 100 * ms;
    run.spans.push_back({t, t + 100 * ms, 100, 100, SpanKind::kStep, run.strings.intern("step")});
    run.spans.push_back({t, t + 40 * ms, 100, 100, SpanKind::kDataWait, run.strings.intern("data_wait")});
    run.spans.push_back({t + 40 * ms, t + 70 * ms, 100, 100, SpanKind::kForward, run.strings.intern("forward")});
  }
  int64_t ts = 5 * ms;  // 10 ms apart: 40 samples in steps, 10 after them
  fixtures::add_samples(run, 100, 100, {loop}, 50, ts);
  pb::Profile p = render(run);
  std::map<std::string, int64_t> by_phase;
  for (const pb::Sample& s : p.sample()) {
    auto l = labels(p, s);
    EXPECT_EQ(l.at("rank"), "3");
    by_phase[l.count("phase") ? l.at("phase") : "none"] += s.value(0);
  }
  std::map<std::string, int64_t> want = {{"data_wait", 16}, {"forward", 12}, {"other", 12}, {"none", 10}};
  EXPECT_EQ(by_phase, want);
}

TEST(Pprof, SpanRunWeighsStacksBySelfTime) {
  stepscope::Run run = fixtures::span_run();
  pb::Profile p = render(run);
  EXPECT_EQ(p.period(), 0);
  int64_t forward_ns = -1;
  for (const pb::Sample& s : p.sample()) {
    std::vector<std::string> names = stack(p, s);
    if (names == std::vector<std::string>{"step 1", "forward;fwd"}) forward_ns = s.value(1);
  }
  EXPECT_EQ(forward_ns, 200'000);  // 300 us less the 100 us of its child
  EXPECT_EQ(p.duration_nanos(), 2'000'000);  // from the first host span's start to the last's end
}

}  // namespace
}  // namespace stepscope
