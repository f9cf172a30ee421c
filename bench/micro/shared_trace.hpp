// The real Kineto trace the micro-benchmarks share: ../shared's
// ns-resolution CUDA trace (15 MB of JSON, gzipped), found through
// STEPSCOPE_SHARED or next to the checkout.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace stepscope::bench {

inline std::filesystem::path shared_kineto_trace() {
  const char* shared = std::getenv("STEPSCOPE_SHARED");
  std::filesystem::path root = shared ? shared : STEPSCOPE_SOURCE_DIR "/../shared";
  return root / "testdata/kineto/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
}

}  // namespace stepscope::bench
