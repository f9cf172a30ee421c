// The caching allocator's "[memory]" events of a torch.profiler trace become
// counter tracks per process and GPU (src/importers/memory_events.*).
#include <gtest/gtest.h>

#include <string>

#include "chrome_trace_test_support.hpp"

namespace {

std::string memory_event(int ts, int device_type, int device, const std::string& allocated, long long reserved) {
  return R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 8, "ts": )" +
         std::to_string(ts) + R"(, "args": {"Ev Idx": 1, "Device Type": )" + std::to_string(device_type) +
         R"(, "Device Id": )" + std::to_string(device) + R"(, "Addr": 1234, "Bytes": 512, "Total Allocated": )" +
         allocated + R"(, "Total Reserved": )" + std::to_string(reserved) + "}}";
}

// name -> [(ts_ns, value)] of the run's tracks of process 7.
std::map<std::string, std::vector<std::pair<int64_t, double>>> tracks_of(const stepscope::Run& run) {
  std::map<std::string, std::vector<std::pair<int64_t, double>>> out;
  for (const stepscope::CounterValue& v : run.counter_values) {
    const stepscope::CounterTrack& t = run.counter_tracks[v.track];
    EXPECT_EQ(t.pid, 7);
    EXPECT_EQ(run.strings.get(t.unit), "bytes");
    out[run.strings.get(t.name)].emplace_back(v.ts_ns, v.value);
  }
  return out;
}

TEST(MemoryEvents, BecomeAllocatedAndReservedTracksPerGpu) {
  std::string json = R"({"traceEvents": [)" + memory_event(10, 1, 0, "1024", 2097152) + "," +
                     memory_event(11, 0, -1, "64", 0) + "," +  // CPU: not a GPU track
                     memory_event(12, 1, 1, "4096", 2097152) + "," + memory_event(13, 1, 0, "512", 2097152) + "," +
                     memory_event(14, 19, 2, "256", 1024) + "," +  // MTIA: an accelerator too
                     memory_event(15, 14, 3, "128", 0) + "]}";      // meta tensors: no memory
  stepscope::Run run = stepscope::import_chrome_trace_bytes(json, "trace.json", {});
  auto tracks = tracks_of(run);
  using Points = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(tracks["process.gpu.0.allocated_bytes"], (Points{{10000, 1024}, {13000, 512}}));
  EXPECT_EQ(tracks["process.gpu.0.reserved_bytes"], (Points{{10000, 2097152}, {13000, 2097152}}));
  EXPECT_EQ(tracks["process.gpu.1.allocated_bytes"], (Points{{12000, 4096}}));
  EXPECT_EQ(tracks["process.gpu.2.allocated_bytes"], (Points{{14000, 256}}));
  EXPECT_EQ(tracks.size(), 6u);
  EXPECT_EQ(run.metadata.at("instant_events"), "6");
  EXPECT_EQ(stepscope::test::warnings_of(run), "");
}

TEST(MemoryEvents, UnreadableTotalsAreCountedNotGuessed) {
  std::string json = R"({"traceEvents": [)" + memory_event(10, 1, 0, "\"lots\"", 1) + "," +
                     memory_event(11, 1, 0, "-5", 1) + "," + memory_event(12, 1, 0, "8", 16) + "]}";
  stepscope::Run run = stepscope::import_chrome_trace_bytes(json, "trace.json", {});
  auto tracks = tracks_of(run);
  EXPECT_EQ(tracks["process.gpu.0.allocated_bytes"].size(), 1u);
  EXPECT_NE(stepscope::test::warnings_of(run).find(
                "2 \"[memory]\" events without numeric device and totals ignored"),
            std::string::npos)
      << stepscope::test::warnings_of(run);
  stepscope::ChromeTraceOptions strict;
  strict.strict = true;
  EXPECT_NE(stepscope::test::import_error(json, strict).find("[memory]"), std::string::npos);
}

}  // namespace
