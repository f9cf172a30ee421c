// NVIDIA GPUs through NVML, loaded at run time with dlopen so that the
// binary needs neither a GPU nor the driver to run: without them, the GPU
// section of sysmon is absent and reason() says why.
//
// Only the few functions used are looked up, with prototypes declared from
// NVML's documented C API (nvml.h is not needed to build).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepscope {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct GpuProcessReading {
  pid_t pid = 0;
  std::optional<uint64_t> memory_bytes;      // NVML gives none under some drivers (WDDM, MIG)
  std::optional<double> sm_util_percent;     // from nvmlDeviceGetProcessUtilization
};

// One reading of one GPU. Metrics a GPU does not support are absent.
struct GpuReading {
  unsigned index = 0;
  std::string name;
  std::string uuid;  // "GPU-…", as DCGM's exporter labels the GPU; empty when NVML has none
  std::optional<double> util_percent;         // share of time a kernel was running
  std::optional<double> memory_util_percent;  // share of time device memory was read or written
  std::optional<uint64_t> memory_used_bytes, memory_total_bytes;
  std::optional<double> sm_clock_mhz, power_watts, temperature_c;
  std::optional<double> pcie_rx_bytes_per_s, pcie_tx_bytes_per_s;
  std::vector<GpuProcessReading> processes;
};

class Nvml {
 public:
  // Loads `library` and initialises NVML; on failure available() is false.
  explicit Nvml(const std::string& library = kNvmlLibrary);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const { return api_ != nullptr; }
  // Why there are no GPUs: no library, NVML failed to start, no device.
  const std::string& reason() const { return reason_; }

  // Which queries a reading makes (their cost on an H200: bench/README.md,
  // "NVML on a GPU machine"). Utilization and memory are always read. The
  // slow ones (SM clock, power, temperature, the processes on the GPU) change
  // slowly: `record` reads them once a second, on the sampler's thread. Read
  // only with the slow ones: PCIe throughput, which blocks about 40 ms per
  // GPU, and each process's SM utilization, which costs 1.5 to 2.5 ms of CPU
  // per GPU.
  struct Queries {
    bool slow = true;
    bool pcie = false;
    bool process_utilization = true;
  };

  // One reading of every GPU. An NVML error other than "not supported"
  // (a GPU fallen off the bus, a driver reloaded) returns nullopt, sets
  // reason() and shuts NVML down: the caller warns once and carries on.
  std::optional<std::vector<GpuReading>> read(Queries queries);

  struct Api;  // the resolved functions, defined in nvml.cpp

 private:
  void disable(std::string reason);
  GpuReading read_device(unsigned index, Queries queries, int& error);

  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
  unsigned device_count_ = 0;
  std::vector<std::string> names_;  // per device: read once, a name does not change
  std::vector<std::string> uuids_;  // likewise
  std::vector<unsigned long long> last_process_sample_us_;  // per device, for process utilization
  std::string reason_;
};

}  // namespace stepscope
