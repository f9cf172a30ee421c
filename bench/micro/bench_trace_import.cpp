// The Chrome-trace importer's stages on a real Kineto trace held in memory
// (so no disk or page cache): splitting alone; splitting, then parsing each
// event (by the plain-event reader, or by simdjson alone as before it);
// splitting and parsing in one pass (the scanner's pre-reader, as the
// importer does); and the whole import into a Run, on one thread and on two
// (the reading thread of trace_event_pipeline.hpp). Bytes/s are of the JSON
// text. The whole imports report wall time ("Time") and the CPU time of the
// process, both threads ("CPU").
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include "importers/chrome_trace.hpp"
#include "importers/chrome_trace_event.hpp"
#include "importers/trace_event_pipeline.hpp"
#include "importers/trace_event_scanner.hpp"
#include "shared_trace.hpp"
#include "util/file_bytes.hpp"

namespace stepscope {
namespace {

// The ns-resolution CUDA trace from ../shared, decompressed, or "" if absent.
const std::string& trace_text() {
  static const std::string text = [] {
    std::filesystem::path path = bench::shared_kineto_trace();
    return std::filesystem::exists(path) ? read_file_bytes(path.string()) : std::string();
  }();
  return text;
}

bool have_trace(benchmark::State& state) { return bench::have_shared_trace(state, trace_text()); }

void BM_ScanTraceEvents(benchmark::State& state) {
  if (!have_trace(state)) return;
  for (auto _ : state) {
    ByteStream input = ByteStream::from_memory(trace_text(), "trace.json");
    TraceEventScanner scanner(input);
    size_t events = 0;
    for (auto piece = scanner.next(); piece != TraceEventScanner::Piece::kEnd; piece = scanner.next()) {
      events += piece == TraceEventScanner::Piece::kEvent;
    }
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace_text().size()));
}
BENCHMARK(BM_ScanTraceEvents)->Unit(benchmark::kMillisecond);

// Splits, then reads each split event; `plain` picks the reader.
void scan_and_read(benchmark::State& state, bool plain) {
  if (!have_trace(state)) return;
  ChromeTraceEventReader reader("trace.json", plain);
  for (auto _ : state) {
    ByteStream input = ByteStream::from_memory(trace_text(), "trace.json");
    TraceEventScanner scanner(input);
    for (auto piece = scanner.next(); piece != TraceEventScanner::Piece::kEnd; piece = scanner.next()) {
      if (piece != TraceEventScanner::Piece::kEvent) continue;
      reader.read(scanner.text(), scanner.padded_size(), scanner.offset(), scanner.event_index());
      benchmark::DoNotOptimize(reader.fields().ts_ns);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace_text().size()));
}

void BM_ScanAndReadTraceEvents(benchmark::State& state) { scan_and_read(state, true); }
BENCHMARK(BM_ScanAndReadTraceEvents)->Unit(benchmark::kMillisecond);

void BM_ScanAndReadTraceEventsSimdjson(benchmark::State& state) { scan_and_read(state, false); }
BENCHMARK(BM_ScanAndReadTraceEventsSimdjson)->Unit(benchmark::kMillisecond);

void BM_ScanAndPreReadTraceEvents(benchmark::State& state) {
  if (!have_trace(state)) return;
  ChromeTraceEventReader reader("trace.json");
  for (auto _ : state) {
    ByteStream input = ByteStream::from_memory(trace_text(), "trace.json");
    TraceEventScanner scanner(input);
    scanner.set_pre_reader(&reader);
    for (auto piece = scanner.next(); piece != TraceEventScanner::Piece::kEnd; piece = scanner.next()) {
      if (piece != TraceEventScanner::Piece::kEvent) continue;
      if (!scanner.pre_read()) reader.read(scanner.text(), scanner.padded_size(), scanner.offset(), scanner.event_index());
      benchmark::DoNotOptimize(reader.fields().ts_ns);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace_text().size()));
}
BENCHMARK(BM_ScanAndPreReadTraceEvents)->Unit(benchmark::kMillisecond);

// The same reading on the importer's reading thread, handed over to a
// consumer that only takes each event's fields (reading those the reading
// thread left to it) and builds nothing: against BM_ScanAndPreReadTraceEvents,
// the CPU the hand-over itself costs, both threads together.
void BM_HandOverTraceEvents(benchmark::State& state) {
  if (!have_trace(state)) return;
  ChromeTraceEventReader reader("trace.json");
  EventFields fields;
  EventArgs args;
  for (auto _ : state) {
    ByteStream input = ByteStream::from_memory(trace_text(), "trace.json");
    TraceEventPipeline pipeline(input, size_t{4} << 20, true);
    while (const TraceEventBatch* batch = pipeline.next()) {
      for (size_t i = 0; i < batch->size; ++i) {
        const PackedPiece& piece = batch->pieces[i];
        if (!piece.is_event()) continue;
        if (piece.is_read()) {
          unpack_read_event(piece, batch->numbers, fields, args);
          benchmark::DoNotOptimize(fields.ts_ns);
        } else {
          reader.read(piece.text_view(), batch->padded_size(piece), batch->offset(piece), piece.event_index);
          benchmark::DoNotOptimize(reader.fields().ts_ns);
        }
      }
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace_text().size()));
}
BENCHMARK(BM_HandOverTraceEvents)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

ChromeTraceOptions on_threads(ImportThreads threads) {
  ChromeTraceOptions options;
  options.threads = threads;
  return options;
}

void import_in_memory(benchmark::State& state, ImportThreads threads) {
  if (!have_trace(state)) return;
  for (auto _ : state) {
    Run run = import_chrome_trace_bytes(trace_text(), "trace.json", on_threads(threads));
    benchmark::DoNotOptimize(run.spans.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace_text().size()));
}

void BM_ImportTrace(benchmark::State& state) { import_in_memory(state, ImportThreads::kTwo); }
BENCHMARK(BM_ImportTrace)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

void BM_ImportTraceOneThread(benchmark::State& state) { import_in_memory(state, ImportThreads::kOne); }
BENCHMARK(BM_ImportTraceOneThread)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

// The whole import of a trace file named by $STEPSCOPE_BENCH_TRACE (e.g. the
// large one bench/import_trace.py --keep-trace builds), from the file as the
// CLI reads it, once per process so fresh pages are counted: the import
// alone, without the analyses `stepscope report` adds. Run each by itself:
//   STEPSCOPE_BENCH_TRACE=... stepscope_bench --benchmark_filter='ImportTraceFile$'
//   STEPSCOPE_BENCH_TRACE=... stepscope_bench --benchmark_filter=ImportTraceFileOneThread
// The counter main_thread_cpu_ms is the CPU time of the importer's own
// thread alone: on two threads, a lower bound of the wall time an idle
// machine would give (as is half the process CPU time).
double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

void import_file(benchmark::State& state, ImportThreads threads) {
  const char* path = std::getenv("STEPSCOPE_BENCH_TRACE");
  if (path == nullptr) {
    state.SkipWithError("set STEPSCOPE_BENCH_TRACE to a trace file");
    return;
  }
  double main_thread_ms = 0;
  for (auto _ : state) {
    double before = thread_cpu_ms();
    Run run = import_chrome_trace(path, on_threads(threads));
    main_thread_ms += thread_cpu_ms() - before;
    benchmark::DoNotOptimize(run.spans.data());
  }
  state.counters["main_thread_cpu_ms"] = main_thread_ms / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * std::filesystem::file_size(path)));
}

void BM_ImportTraceFile(benchmark::State& state) { import_file(state, ImportThreads::kAuto); }
BENCHMARK(BM_ImportTraceFile)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime()->MeasureProcessCPUTime();

void BM_ImportTraceFileOneThread(benchmark::State& state) { import_file(state, ImportThreads::kOne); }
BENCHMARK(BM_ImportTraceFileOneThread)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace stepscope
