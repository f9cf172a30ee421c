// Inflating a gzip trace: stepscope's decoder (ISA-L, util/gzip_decoder.hpp)
// against zlib's inflate, the library it replaced, with the same 1 MB input
// and 4 MB output buffers, on a real Kineto trace as torch.profiler gzips it.
// Bytes/s are of the inflated text.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "shared_trace.hpp"
#include "util/byte_stream.hpp"

namespace stepscope {
namespace {

constexpr size_t kOutputBuffer = size_t{4} << 20;  // the trace scanner's chunk
constexpr size_t kInputBuffer = size_t{1} << 20;   // GzipDecoder's

// The compressed bytes of the ns-resolution CUDA trace in ../shared, or "".
const std::string& gzip_trace() {
  static const std::string bytes = [] {
    std::ifstream in(bench::shared_kineto_trace(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  return bytes;
}

bool have_trace(benchmark::State& state) { return bench::have_shared_trace(state, gzip_trace()); }

void BM_InflateTrace(benchmark::State& state) {
  if (!have_trace(state)) return;
  std::vector<char> out(kOutputBuffer);
  size_t total = 0;
  for (auto _ : state) {
    ByteStream input = ByteStream::from_memory(gzip_trace(), "trace.json.gz");
    total = 0;
    while (size_t got = input.read(out.data(), out.size())) total += got;
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
}
BENCHMARK(BM_InflateTrace)->Unit(benchmark::kMillisecond);

// The baseline: zlib, as the decoder was before ISA-L (one member: the
// shared trace has one).
void BM_InflateTraceZlib(benchmark::State& state) {
  if (!have_trace(state)) return;
  std::vector<char> out(kOutputBuffer);
  const std::string& in = gzip_trace();
  size_t total = 0;
  for (auto _ : state) {
    z_stream stream{};
    inflateInit2(&stream, 16 + MAX_WBITS);
    total = 0;
    int status = Z_OK;
    for (size_t offset = 0; status != Z_STREAM_END;) {
      if (stream.avail_in == 0) {
        size_t n = std::min(kInputBuffer, in.size() - offset);
        stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + offset));
        stream.avail_in = static_cast<uInt>(n);
        offset += n;
      }
      stream.next_out = reinterpret_cast<Bytef*>(out.data());
      stream.avail_out = static_cast<uInt>(out.size());
      status = inflate(&stream, Z_NO_FLUSH);
      if (status != Z_OK && status != Z_STREAM_END) {
        state.SkipWithError("zlib refused the trace");
        break;
      }
      total += out.size() - stream.avail_out;
    }
    inflateEnd(&stream);
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
}
BENCHMARK(BM_InflateTraceZlib)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepscope
