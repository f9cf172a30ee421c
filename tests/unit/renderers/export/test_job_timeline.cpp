#include "renderers/export/job_timeline.hpp"

#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"

namespace stepscope {
namespace {

stepscope::Run run_with_a_sample() {
  stepscope::Run run;
  run.samples.push_back({.ts_ns = 5, .pid = 4'000'000, .tid = 4'000'000});
  return run;
}

// A sample's pid is 32-bit: the runs whose moved pids still fit are placed,
// the next is refused by name rather than given a wrapped pid.
TEST(JobTimeline, SampledRunsPastWhatAPidHoldsAreRefused) {
  stepscope::Run fits = run_with_a_sample();
  place_on_job_timeline(fits, 212);
  EXPECT_EQ(fits.samples.front().pid, 4'000'000 + 213 * kJobPidStride);
  stepscope::Run past = run_with_a_sample();
  try {
    place_on_job_timeline(past, 214);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("213 runs at most"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stepscope
