// Where the unit tests find the real torch.profiler traces of
// ../shared/testdata/kineto (STEPSCOPE_SHARED overrides the folder). They stay
// there (shared/README.md): a clone alone skips the tests that read them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace stepscope::test {

inline std::filesystem::path shared_dir() {
  if (const char* from_env = std::getenv("STEPSCOPE_SHARED")) return from_env;
  return std::filesystem::path(__FILE__).parent_path() / "../../../shared";
}

inline std::filesystem::path kineto_dir() { return shared_dir() / "testdata/kineto"; }

// The first .json.gz trace in `folder` of testdata/kineto, or an empty path.
inline std::filesystem::path kineto_trace(const std::string& folder) {
  std::filesystem::path dir = kineto_dir() / folder;
  if (!std::filesystem::is_directory(dir)) return {};
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().string().ends_with(".json.gz")) return entry.path();
  }
  return {};
}

// Every .json and .json.gz trace under testdata/kineto, sorted; none when
// the folder is missing.
inline std::vector<std::string> every_kineto_trace() {
  std::vector<std::string> paths;
  if (!std::filesystem::is_directory(kineto_dir())) return paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kineto_dir())) {
    std::string name = entry.path().string();
    if (name.ends_with(".json.gz") || name.ends_with(".json")) paths.push_back(std::move(name));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace stepscope::test

// Ends the test when `missing`: skipped, naming the folder, or failed where
// STEPSCOPE_REQUIRE_SHARED is set (.ci/run), so CI never skips them quietly.
#define SKIP_WITHOUT_KINETO_TRACES(missing)                                                        \
  if (missing) {                                                                                   \
    if (std::getenv("STEPSCOPE_REQUIRE_SHARED")) FAIL() << "no Kineto test traces at "             \
                                                        << ::stepscope::test::kineto_dir();       \
    GTEST_SKIP() << "no Kineto test traces at " << ::stepscope::test::kineto_dir()                 \
                 << " (put shared/ beside the checkout or set STEPSCOPE_SHARED)";                  \
  }
