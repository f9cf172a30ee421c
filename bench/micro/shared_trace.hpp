// The real Kineto trace the micro-benchmarks share: ../shared's
// ns-resolution CUDA trace (15 MB of JSON, gzipped), found through
// STEPSCOPE_SHARED or next to the checkout.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace stepscope::bench {

inline std::filesystem::path shared_kineto_trace() {
  const char* shared = std::getenv("STEPSCOPE_SHARED");
  std::filesystem::path root = shared ? shared : STEPSCOPE_SOURCE_DIR "/../shared";
  return root / "testdata/kineto/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
}

// Whether `bytes`, a benchmark's copy of that trace, were found; when not,
// the benchmark is skipped with the reason.
inline bool have_shared_trace(benchmark::State& state, const std::string& bytes) {
  if (!bytes.empty()) return true;
  state.SkipWithError("shared test data not found (set STEPSCOPE_SHARED)");
  return false;
}

}  // namespace stepscope::bench
