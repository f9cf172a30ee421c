// What each NVML query that `record`'s system monitor makes costs, on a
// machine with an NVIDIA GPU: the monitor polls GPU counters at 10 Hz on the
// sampler's own thread, so a slow query is paid by every round that follows.
//
//   g++ -O2 -std=c++20 -o nvml_call_cost bench/nvml_call_cost.cpp -ldl && ./nvml_call_cost [CALLS]
//
// For each query, on GPU 0, the median of the wall time and of this thread's
// CPU time per call, in microseconds: "back_to_back", CALLS calls (default
// 200) of one query in a row; "spaced", every query once per round and a
// round every 100 ms, 20 rounds, as the monitor polls. The two differ where
// the driver caches an answer for a while. Prints one JSON object.
// Prototypes as in nvml.h (not needed to build); no GPU: it says so and
// exits 1.
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Device = void*;
using Return = int;

int64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

using Query = std::pair<std::string, std::function<Return()>>;

struct Times {
  std::vector<double> wall_us, cpu_us;
  Return status = 0;

  void time(const std::function<Return()>& call) {
    int64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    status = call();
    cpu_us.push_back((now_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3);
    wall_us.push_back((now_ns(CLOCK_MONOTONIC) - w0) / 1e3);
  }
};

void print(const char* mode, const std::vector<Query>& queries, const std::vector<Times>& times) {
  std::printf(", \"%s\": {", mode);
  for (size_t i = 0; i < queries.size(); ++i) {
    std::printf("%s\"%s\": {\"wall_us\": %.2f, \"cpu_us\": %.2f, \"status\": %d}", i ? ", " : "",
                queries[i].first.c_str(), median(times[i].wall_us), median(times[i].cpu_us), times[i].status);
  }
  std::printf("}");
}

void back_to_back(const std::vector<Query>& queries, int calls) {
  std::vector<Times> times(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    for (int c = 0; c < calls; ++c) times[i].time(queries[i].second);
  }
  print("back_to_back", queries, times);
}

void spaced(const std::vector<Query>& queries) {
  std::vector<Times> times(queries.size());
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (size_t i = 0; i < queries.size(); ++i) times[i].time(queries[i].second);
  }
  print("spaced", queries, times);
}

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

using ProcessUtilizationFn = Return (*)(Device, void*, unsigned*, unsigned long long);

Return process_utilization(ProcessUtilizationFn fn, Device device, unsigned long long& last_seen_us) {
  unsigned n = 0;
  Return r = fn(device, nullptr, &n, last_seen_us);
  if (n == 0) return r;
  std::vector<unsigned char> samples(32 * n);
  r = fn(device, samples.data(), &n, last_seen_us);
  for (unsigned i = 0; r == 0 && i < n; ++i) {
    unsigned long long ts = 0;
    std::memcpy(&ts, samples.data() + 32 * i + 8, sizeof ts);
    last_seen_us = std::max(last_seen_us, ts);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "no NVML: %s\n", dlerror());
    return 1;
  }
  auto init = symbol<Return (*)()>(lib, "nvmlInit_v2");
  auto handle = symbol<Return (*)(unsigned, Device*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  Device device = nullptr;
  if (!init || !handle || init() != 0 || handle(0, &device) != 0) {
    std::fprintf(stderr, "NVML found no GPU 0\n");
    return 1;
  }
  unsigned u[64] = {};
  unsigned long long mem[3] = {};
  char name[96] = {};
  unsigned char processes[64 * 24] = {};
  unsigned long long last_seen_us = 0;
  auto name_fn = symbol<Return (*)(Device, char*, unsigned)>(lib, "nvmlDeviceGetName");
  auto util_fn = symbol<Return (*)(Device, unsigned*)>(lib, "nvmlDeviceGetUtilizationRates");
  auto mem_fn = symbol<Return (*)(Device, unsigned long long*)>(lib, "nvmlDeviceGetMemoryInfo");
  auto clock_fn = symbol<Return (*)(Device, unsigned, unsigned*)>(lib, "nvmlDeviceGetClockInfo");
  auto power_fn = symbol<Return (*)(Device, unsigned*)>(lib, "nvmlDeviceGetPowerUsage");
  auto temp_fn = symbol<Return (*)(Device, unsigned, unsigned*)>(lib, "nvmlDeviceGetTemperature");
  auto procs_fn = symbol<Return (*)(Device, unsigned*, void*)>(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  auto putil_fn = symbol<ProcessUtilizationFn>(lib, "nvmlDeviceGetProcessUtilization");
  const std::vector<std::pair<std::string, std::function<Return()>>> queries = {
      {"handle_by_index", [&] { return handle(0, &device); }},
      {"name", [&] { return name_fn(device, name, sizeof name); }},
      {"utilization", [&] { return util_fn(device, u); }},
      {"memory", [&] { return mem_fn(device, mem); }},
      {"sm_clock", [&] { return clock_fn(device, 1, u); }},
      {"power", [&] { return power_fn(device, u); }},
      {"temperature", [&] { return temp_fn(device, 0, u); }},
      {"compute_processes", [&] { unsigned n = 64; return procs_fn(device, &n, processes); }},
      // Process utilization asked for the samples newer than the last one
      // seen ("since_last"), or for all the driver keeps ("all"): the count,
      // then the samples (32 bytes each).
      {"process_utilization_since_last", [&] { return process_utilization(putil_fn, device, last_seen_us); }},
      {"process_utilization_all", [&] {
         unsigned long long from_zero = 0;
         return process_utilization(putil_fn, device, from_zero);
       }},
  };
  std::printf("{\"calls\": %d", calls);
  back_to_back(queries, calls);
  spaced(queries);
  std::printf("}\n");
  return 0;
}
