// The analyses `report` runs after the import, on a real Kineto trace
// imported once: the whole of build_report and each analysis alone. The
// trace is the ns-resolution CUDA trace of ../shared (15 MB, 68,657 events),
// or the file STEPSCOPE_ANALYSES_TRACE names (e.g. that trace repeated to
// 508 MB, as bench/import_trace.py --keep-trace writes it). Figures in
// bench/README.md ("The analyses after the import", "... side by side",
// "... with fewer passes and sorts", "The analyses' and the flow binding's
// CPU").
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "analyses/diagnosis.hpp"
#include "analyses/function_costs.hpp"
#include "analyses/gpu.hpp"
#include "analyses/ops.hpp"
#include "analyses/profile.hpp"
#include "analyses/report.hpp"
#include "analyses/steps.hpp"
#include "importers/chrome_trace.hpp"

namespace stepscope {
namespace {

std::string trace_path() {
  if (const char* path = std::getenv("STEPSCOPE_ANALYSES_TRACE")) return path;
  const char* shared = std::getenv("STEPSCOPE_SHARED");
  std::filesystem::path root = shared ? shared : STEPSCOPE_SOURCE_DIR "/../shared";
  return (root / "testdata/kineto/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz").string();
}

// The imported Run, or null when the trace is absent.
const Run* trace_run() {
  static const std::unique_ptr<Run> run = []() -> std::unique_ptr<Run> {
    std::string path = trace_path();
    if (!std::filesystem::exists(path)) return nullptr;
    return std::make_unique<Run>(import_chrome_trace(path));
  }();
  return run.get();
}

bool have_trace(benchmark::State& state) {
  if (trace_run()) return true;
  state.SkipWithError("trace not found (set STEPSCOPE_SHARED or STEPSCOPE_ANALYSES_TRACE)");
  return false;
}

void count_spans(benchmark::State& state) {
  state.counters["spans"] = static_cast<double>(trace_run()->spans.size());
}

// The argument is the number of threads the analyses run on side by side
// (0: the machine's). CPU time is the process's, all threads together; the
// time column is wall time.
void BM_AnalysesBuildReport(benchmark::State& state) {
  if (!have_trace(state)) return;
  size_t threads = state.range(0) == 0 ? analysis_threads() : static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    Report report = build_report(*trace_run(), "trace.json", {}, {}, threads);
    benchmark::DoNotOptimize(report.ops.ops.data());
  }
  count_spans(state);
  state.counters["threads"] = static_cast<double>(threads);
}
BENCHMARK(BM_AnalysesBuildReport)->Arg(1)->Arg(0)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_AnalysesProfileAndFunctions(benchmark::State& state) {
  if (!have_trace(state)) return;
  for (auto _ : state) {
    Profile profile = build_profile(*trace_run(), {});
    FunctionCosts costs = function_costs(profile);
    benchmark::DoNotOptimize(costs.functions.data());
  }
  count_spans(state);
}
BENCHMARK(BM_AnalysesProfileAndFunctions)->Unit(benchmark::kMillisecond);

void BM_AnalysesOps(benchmark::State& state) {
  if (!have_trace(state)) return;
  for (auto _ : state) {
    OpsAnalysis ops = analyze_ops(*trace_run());
    benchmark::DoNotOptimize(ops.ops.data());
  }
  count_spans(state);
}
BENCHMARK(BM_AnalysesOps)->Unit(benchmark::kMillisecond);

void BM_AnalysesGpuRank(benchmark::State& state) {
  if (!have_trace(state)) return;
  for (auto _ : state) {
    GpuRank rank = analyze_gpu_rank(*trace_run(), "trace.json");
    benchmark::DoNotOptimize(rank.kernels.by_name.data());
  }
  count_spans(state);
}
BENCHMARK(BM_AnalysesGpuRank)->Unit(benchmark::kMillisecond);

void BM_AnalysesStepsAndDiagnosis(benchmark::State& state) {
  if (!have_trace(state)) return;
  const Run& run = *trace_run();
  GpuRank rank = analyze_gpu_rank(run, "trace.json");
  std::vector<ProcessSummary> processes = summarize_processes(run);
  for (auto _ : state) {
    StepsAnalysis steps = analyze_steps(run);
    Diagnosis diagnosis = diagnose({run, steps, processes, &rank});
    benchmark::DoNotOptimize(diagnosis.findings.data());
  }
  count_spans(state);
}
BENCHMARK(BM_AnalysesStepsAndDiagnosis)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope
