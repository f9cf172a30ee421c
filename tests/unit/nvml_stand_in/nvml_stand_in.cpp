// A stand-in for libnvidia-ml.so.1, loaded by the Nvml tests in its place: two
// GPUs with fixed readings, one process on GPU 0, and a count of the calls of
// each query, which the tests read through stand_in_calls() to check which
// queries a reading makes. Signatures as in nvml.h.
#include <cstring>
#include <map>
#include <string>

namespace {

using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kInvalidArgument = 2;
constexpr Return kInsufficientSize = 7;
constexpr unsigned kDevices = 2;

struct Device {
  unsigned index;
};
Device devices[kDevices] = {{0}, {1}};

std::map<std::string, int>& calls() {
  static std::map<std::string, int> counts;
  return counts;
}

Return count(const char* query) {
  ++calls()[query];
  return kSuccess;
}

}  // namespace

extern "C" {

int stand_in_calls(const char* query) { return calls()[query]; }
void stand_in_reset() { calls().clear(); }

Return nvmlInit_v2() { return count("init"); }
Return nvmlShutdown() { return count("shutdown"); }
const char* nvmlErrorString(Return) { return "stand-in error"; }
Return nvmlDeviceGetCount_v2(unsigned* n) {
  *n = kDevices;
  return count("device_count");
}
Return nvmlDeviceGetHandleByIndex_v2(unsigned index, Device** device) {
  if (index >= kDevices) return kInvalidArgument;
  *device = &devices[index];
  return count("handle_by_index");
}
Return nvmlDeviceGetName(Device* device, char* name, unsigned size) {
  std::strncpy(name, device->index == 0 ? "Stand-in GPU \"zero\"" : "Stand-in GPU one", size);
  return count("name");
}
Return nvmlDeviceGetUUID(Device* device, char* uuid, unsigned size) {
  std::strncpy(uuid, device->index == 0 ? "GPU-0000aaaa-stand-in" : "GPU-1111bbbb-stand-in", size);
  return count("uuid");
}
Return nvmlDeviceGetUtilizationRates(Device* device, unsigned* gpu_and_memory) {
  gpu_and_memory[0] = 40 + device->index;
  gpu_and_memory[1] = 10;
  return count("utilization");
}
Return nvmlDeviceGetMemoryInfo(Device*, unsigned long long* total_free_used) {
  total_free_used[0] = 80ULL << 30;
  total_free_used[1] = 60ULL << 30;
  total_free_used[2] = 20ULL << 30;
  return count("memory");
}
Return nvmlDeviceGetClockInfo(Device*, unsigned, unsigned* mhz) {
  *mhz = 1980;
  return count("clock");
}
Return nvmlDeviceGetPowerUsage(Device*, unsigned* milliwatts) {
  *milliwatts = 350'000;
  return count("power");
}
Return nvmlDeviceGetTemperature(Device*, unsigned, unsigned* celsius) {
  *celsius = 45;
  return count("temperature");
}
Return nvmlDeviceGetPcieThroughput(Device*, unsigned, unsigned* kib_per_s) {
  *kib_per_s = 1024;
  return count("pcie");
}

struct ProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
Return nvmlDeviceGetComputeRunningProcesses_v3(Device* device, unsigned* n, ProcessInfo* infos) {
  count("processes");
  const unsigned have = device->index == 0 ? 1 : 0;
  if (*n < have) {
    *n = have;
    return kInsufficientSize;
  }
  *n = have;
  if (have) infos[0] = {4242, 5ULL << 30, 0, 0};
  return kSuccess;
}

struct UtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned pid;
  unsigned long long time_stamp;
  unsigned sm, mem, enc, dec;
};
Return nvmlDeviceGetProcessUtilization(Device* device, UtilizationSample* samples, unsigned* n,
                                       unsigned long long) {
  count("process_utilization");
  if (device->index != 0) {
    *n = 0;
    return kSuccess;
  }
  if (samples == nullptr || *n < 1) {
    *n = 1;
    return kInsufficientSize;
  }
  *n = 1;
  samples[0] = {4242, 1000, 70, 0, 0, 0};
  return kSuccess;
}

}  // extern "C"
