// The analyses `report` runs after the import, on a real Kineto trace
// imported once: the whole of build_report, each analysis alone, and the
// flow binding the import ends with (BM_BindFlows). The
// trace is the ns-resolution CUDA trace of ../shared (15 MB, 68,657 events),
// or the file STEPSCOPE_ANALYSES_TRACE names (e.g. that trace repeated to
// 508 MB, as bench/import_trace.py --keep-trace writes it). Figures in
// bench/README.md ("The analyses after the import", "... side by side",
// "... with fewer passes and sorts", "The analyses' and the flow binding's
// CPU", "The analyses' passes and the flow binding, again", "The flow binding
// at slice starts", "Smaller endpoints and nodes, ...", "The analyses' fresh
// pages").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyses/device/gpu.hpp"
#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/function_costs.hpp"
#include "analyses/ops.hpp"
#include "analyses/profile.hpp"
#include "analyses/report.hpp"
#include "analyses/spans/span_index.hpp"
#include "analyses/steps/steps.hpp"
#include "importers/chrome_trace.hpp"
#include "importers/flow_binding.hpp"
#include "shared_trace.hpp"

namespace stepscope {
namespace {

std::string trace_path() {
  if (const char* path = std::getenv("STEPSCOPE_ANALYSES_TRACE")) return path;
  return bench::shared_kineto_trace().string();
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

// The two indexes build_report builds first, each alone: the host spans in
// nesting order (with the census) and the device launches.
template <typename Index>
void build_index(benchmark::State& state) {
  if (!have_trace(state)) return;
  for (auto _ : state) {
    Index index(*trace_run());
    benchmark::DoNotOptimize(index);
  }
  count_spans(state);
}

void BM_AnalysesHostSpans(benchmark::State& state) { build_index<HostSpansByThread>(state); }
BENCHMARK(BM_AnalysesHostSpans)->Unit(benchmark::kMillisecond);

void BM_AnalysesDeviceLaunches(benchmark::State& state) { build_index<DeviceLaunches>(state); }
BENCHMARK(BM_AnalysesDeviceLaunches)->Unit(benchmark::kMillisecond);

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

// The flow binding the importer runs after reading (bind_flows), on the
// endpoints the trace's flows had: each flow's start and end at the start of
// the slice it binds to (where Kineto writes them), in the order of those
// slices in the trace, tracks numbered by (pid, tid). `past_start` moves
// every endpoint 1 ns into its slice, where (mostly) no slice starts:
// the tracks are then bound by the sort and sweep, the path for other
// producers' traces.
struct FlowInput {
  FlowTracks tracks;
  std::vector<FlowEndpoint> endpoints;
};

FlowInput flow_input(const Run& run, bool past_start = false) {
  FlowInput in;
  std::map<std::pair<int64_t, int64_t>, uint32_t> number;
  auto track_of = [&](const Span& s) {
    return number.try_emplace({s.pid, s.tid}, static_cast<uint32_t>(number.size())).first->second;
  };
  for (const Span& s : run.spans) in.tracks.of_spans.push_back(track_of(s));
  std::vector<std::pair<SpanId, FlowEndpoint>> placed;
  for (size_t f = 0; f < run.flows.size(); ++f) {
    const Flow& flow = run.flows[f];
    for (bool start : {true, false}) {
      const Span& s = run.spans[start ? flow.from : flow.to];
      FlowEndpoint e{.kind = flow.kind, .id_is_text = false, .is_start = start, .binds_enclosing = true,
                     .id = static_cast<int64_t>(f), .pid = s.pid, .tid = s.tid,
                     .ts_ns = s.start_ns + (past_start ? 1 : 0)};
      placed.emplace_back(start ? flow.from : flow.to, e);
    }
  }
  std::stable_sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [span, e] : placed) {
    in.endpoints.push_back(e);
    in.tracks.of_endpoints.push_back(in.tracks.of_spans[span]);
  }
  in.tracks.count = number.size();
  return in;
}

// Binds a copy of `input` per iteration. The argument: 1 for binding on two
// threads (as the import does), 0 for one.
void bind_flows_of(benchmark::State& state, const FlowInput& input) {
  const Run& run = *trace_run();
  for (auto _ : state) {
    state.PauseTiming();
    FlowInput in = input;
    std::vector<Flow> flows;
    flows.reserve(run.flows.size());
    state.ResumeTiming();
    bind_flows(run.spans, std::move(in.tracks), in.endpoints, flows, state.range(0) == 1);
    benchmark::DoNotOptimize(flows.data());
  }
  state.counters["endpoints"] = static_cast<double>(input.endpoints.size());
}

void BM_BindFlows(benchmark::State& state) {
  if (!have_trace(state)) return;
  static const FlowInput input = flow_input(*trace_run());
  bind_flows_of(state, input);
}
BENCHMARK(BM_BindFlows)->Arg(0)->Arg(1)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMillisecond);

// The same with the endpoints 1 ns past their slices' starts (the sweep).
void BM_BindFlowsPastStarts(benchmark::State& state) {
  if (!have_trace(state)) return;
  static const FlowInput input = flow_input(*trace_run(), true);
  bind_flows_of(state, input);
}
BENCHMARK(BM_BindFlowsPastStarts)->Arg(0)->Arg(1)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope
