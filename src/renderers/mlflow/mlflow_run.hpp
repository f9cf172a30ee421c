// A report as an MLflow run: the parameters, tags and metrics `stepscope
// mlflow` logs (docs/mlflow.md lists them). MLflow's data model, not its wire
// format: publish/mlflow_client.* sends it.
//
// Metrics per step come from the report's main training process (the one the
// report's step figures describe), one point per step at the step's end, with
// the step's ordinal (1 for the first) as MLflow's step; the summary metrics
// (`summary/...`) are over its steady steps, at step 0.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyses/report.hpp"

namespace stepscope {

struct MlflowMetric {
  std::string key;
  double value = 0;
  int64_t timestamp_ms = 0;  // Unix time
  int64_t step = 0;
};

using MlflowPairs = std::vector<std::pair<std::string, std::string>>;

struct MlflowRunContent {
  int64_t start_ms = 0, end_ms = 0;  // Unix time
  MlflowPairs params;  // values cut to kMlflowMaxParamBytes
  MlflowPairs tags;    // values cut to kMlflowMaxTagBytes
  std::vector<MlflowMetric> metrics;
};

struct MlflowRunFacts {
  std::string git_commit{};  // empty: unknown
  int64_t now_unix_ms = 0;  // the time of a run whose times cannot be placed
};

// MLflow's limits on a value (mlflow/utils/validation.py).
inline constexpr size_t kMlflowMaxParamBytes = 6000;
inline constexpr size_t kMlflowMaxTagBytes = 8000;

MlflowRunContent mlflow_run_content(const Report& report, const MlflowRunFacts& facts);

// What to add to a time of `run` (ns, its own clock) to make it Unix time
// (ns): from the recorder's start_unix_ns and start_clock_ns; a trace's
// baseTimeNanoseconds, or 0 for a trace of epoch times; nullopt otherwise.
std::optional<int64_t> unix_minus_run_clock_ns(const Run& run);

}  // namespace stepscope
