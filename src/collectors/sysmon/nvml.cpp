#include "collectors/sysmon/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

// TODO(gpm): SM activity and occupancy from NVML's GPM API (Hopper and
// later: nvmlGpmQueryDeviceSupport, nvmlGpmSampleAlloc/Get, nvmlGpmMetricsGet)
// say more than "utilization", which is only the share of time any kernel
// ran. Its versioned structs (nvmlGpmMetricsGet_t holds an array of metrics
// and samples) must be declared with care and checked on a real Hopper GPU;
// until then GPUs report the classic metrics only.

namespace stepscope {

namespace {

// NVML's C API, as documented in nvml.h. Status codes are an int enum.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kSuccess = 0;
constexpr NvmlReturn kErrorInsufficientSize = 7;
constexpr unsigned kClockSm = 1;          // NVML_CLOCK_SM
constexpr unsigned kTemperatureGpu = 0;   // NVML_TEMPERATURE_GPU
constexpr unsigned kPcieTxBytes = 0;      // NVML_PCIE_UTIL_TX_BYTES
constexpr unsigned kPcieRxBytes = 1;      // NVML_PCIE_UTIL_RX_BYTES
constexpr unsigned kNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE; the UUID's is the same

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t: 16 bytes
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t, also what _v3 takes: 24 bytes
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long time_stamp;  // microseconds
  unsigned int sm_util, mem_util, enc_util, dec_util;
};
static_assert(sizeof(ProcessInfoV1) == 16 && sizeof(ProcessInfoV2) == 24);
static_assert(sizeof(ProcessUtilizationSample) == 32);

// Errors that mean the device or driver is gone: reading again is futile.
// Any other failure only means that one metric is unavailable.
bool is_fatal(NvmlReturn code) {
  switch (code) {
    case 1:    // UNINITIALIZED
    case 9:    // DRIVER_NOT_LOADED
    case 15:   // GPU_IS_LOST
    case 16:   // RESET_REQUIRED
    case 18:   // LIB_RM_VERSION_MISMATCH
    case 999:  // UNKNOWN
      return true;
    default:
      return false;
  }
}

template <typename Fn>
bool resolve(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(library, name));
  return fn != nullptr;
}

}  // namespace

struct Nvml::Api {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*device_count)(unsigned*) = nullptr;
  NvmlReturn (*handle_by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned) = nullptr;  // optional
  NvmlReturn (*utilization)(NvmlDevice, Utilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, Memory*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, unsigned, unsigned*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, unsigned, unsigned*) = nullptr;
  NvmlReturn (*pcie)(NvmlDevice, unsigned, unsigned*) = nullptr;
  // Optional: older drivers lack the versioned process queries.
  NvmlReturn (*processes_v2)(NvmlDevice, unsigned*, ProcessInfoV2*) = nullptr;
  NvmlReturn (*processes_v1)(NvmlDevice, unsigned*, ProcessInfoV1*) = nullptr;
  NvmlReturn (*process_utilization)(NvmlDevice, ProcessUtilizationSample*, unsigned*,
                                    unsigned long long) = nullptr;

  // The first required symbol that is missing, or empty.
  std::string resolve_all(void* lib) {
    struct Required {
      const char* name;
      bool found;
    } required[] = {
        {"nvmlInit_v2", resolve(lib, "nvmlInit_v2", init)},
        {"nvmlShutdown", resolve(lib, "nvmlShutdown", shutdown)},
        {"nvmlErrorString", resolve(lib, "nvmlErrorString", error_string)},
        {"nvmlDeviceGetCount_v2", resolve(lib, "nvmlDeviceGetCount_v2", device_count)},
        {"nvmlDeviceGetHandleByIndex_v2", resolve(lib, "nvmlDeviceGetHandleByIndex_v2", handle_by_index)},
        {"nvmlDeviceGetName", resolve(lib, "nvmlDeviceGetName", name)},
        {"nvmlDeviceGetUtilizationRates", resolve(lib, "nvmlDeviceGetUtilizationRates", utilization)},
        {"nvmlDeviceGetMemoryInfo", resolve(lib, "nvmlDeviceGetMemoryInfo", memory)},
        {"nvmlDeviceGetClockInfo", resolve(lib, "nvmlDeviceGetClockInfo", clock)},
        {"nvmlDeviceGetPowerUsage", resolve(lib, "nvmlDeviceGetPowerUsage", power)},
        {"nvmlDeviceGetTemperature", resolve(lib, "nvmlDeviceGetTemperature", temperature)},
        {"nvmlDeviceGetPcieThroughput", resolve(lib, "nvmlDeviceGetPcieThroughput", pcie)},
    };
    if (!resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v3", processes_v2)) {
      resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v2", processes_v2);
    }
    resolve(lib, "nvmlDeviceGetComputeRunningProcesses", processes_v1);
    resolve(lib, "nvmlDeviceGetProcessUtilization", process_utilization);
    resolve(lib, "nvmlDeviceGetUUID", uuid);
    for (const Required& r : required) {
      if (!r.found) return r.name;
    }
    return {};
  }

  std::string describe(NvmlReturn code) const {
    const char* text = error_string ? error_string(code) : nullptr;
    return fmt::format("{} (NVML error {})", text ? text : "unknown error", code);
  }
};

namespace {

// Calls an NVML getter; the value when it succeeded, nullopt when the metric
// is unsupported; a fatal status is left in `error`.
template <typename T, typename Call>
std::optional<T> query(int& error, Call call) {
  T value{};
  NvmlReturn code = call(&value);
  if (code == kSuccess) return value;
  if (is_fatal(code) && error == kSuccess) error = code;
  return std::nullopt;
}

template <typename T>
std::optional<double> as_double(const std::optional<T>& value, double scale = 1) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value) * scale;
}

std::vector<GpuProcessReading> compute_processes(const Nvml::Api& api, NvmlDevice device) {
  std::vector<GpuProcessReading> out;
  unsigned count = 64;
  for (int attempt = 0; attempt < 2; ++attempt) {
    out.clear();
    NvmlReturn code = 0;
    if (api.processes_v2) {
      std::vector<ProcessInfoV2> infos(count);
      code = api.processes_v2(device, &count, infos.data());
      for (unsigned i = 0; code == kSuccess && i < count; ++i) {
        out.push_back({static_cast<pid_t>(infos[i].pid), infos[i].used_gpu_memory, std::nullopt});
      }
    } else if (api.processes_v1) {
      std::vector<ProcessInfoV1> infos(count);
      code = api.processes_v1(device, &count, infos.data());
      for (unsigned i = 0; code == kSuccess && i < count; ++i) {
        out.push_back({static_cast<pid_t>(infos[i].pid), infos[i].used_gpu_memory, std::nullopt});
      }
    }
    if (code != kErrorInsufficientSize) break;
    count += 16;  // processes started between the two calls
  }
  // NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot tell.
  for (GpuProcessReading& p : out) {
    if (p.memory_bytes == ~0ULL) p.memory_bytes.reset();
  }
  return out;
}

// SM utilization per process over the samples newer than `last_seen_us`,
// which is advanced to the newest sample.
void add_process_utilization(const Nvml::Api& api, NvmlDevice device,
                             unsigned long long& last_seen_us,
                             std::vector<GpuProcessReading>& processes) {
  if (!api.process_utilization) return;
  unsigned count = 0;
  if (api.process_utilization(device, nullptr, &count, last_seen_us) != kErrorInsufficientSize ||
      count == 0) {
    return;
  }
  std::vector<ProcessUtilizationSample> samples(count);
  if (api.process_utilization(device, samples.data(), &count, last_seen_us) != kSuccess) return;
  for (unsigned i = 0; i < count && i < samples.size(); ++i) {
    const ProcessUtilizationSample& s = samples[i];
    last_seen_us = std::max(last_seen_us, s.time_stamp);
    auto it = std::find_if(processes.begin(), processes.end(),
                           [&](const GpuProcessReading& p) { return p.pid == static_cast<pid_t>(s.pid); });
    if (it == processes.end()) it = processes.insert(processes.end(), {static_cast<pid_t>(s.pid), {}, {}});
    it->sm_util_percent = std::max(it->sm_util_percent.value_or(0), static_cast<double>(s.sm_util));
  }
}

// A device's text property (its name, its UUID), empty when NVML has none.
std::string device_text(const Nvml::Api& api, unsigned index, NvmlReturn (*query)(NvmlDevice, char*, unsigned)) {
  NvmlDevice device = nullptr;
  char text[kNameBufferSize] = {};
  if (!query || api.handle_by_index(index, &device) != kSuccess || query(device, text, sizeof text) != kSuccess) {
    return {};
  }
  return std::string(text, ::strnlen(text, sizeof text));
}

}  // namespace

Nvml::Nvml(const std::string& library) {
  library_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    const char* why = ::dlerror();
    reason_ = fmt::format("no NVIDIA driver: cannot load {} ({})", library, why ? why : "not found");
    return;
  }
  auto api = std::make_unique<Api>();
  if (std::string missing = api->resolve_all(library_); !missing.empty()) {
    reason_ = fmt::format("{} lacks {}: NVIDIA driver too old", library, missing);
    return;
  }
  if (NvmlReturn code = api->init(); code != kSuccess) {
    reason_ = fmt::format("NVML did not start: {}", api->describe(code));
    return;
  }
  NvmlReturn code = api->device_count(&device_count_);
  if (code != kSuccess || device_count_ == 0) {
    reason_ = code != kSuccess ? fmt::format("NVML cannot count GPUs: {}", api->describe(code))
                               : std::string("NVML found no GPU");
    api->shutdown();
    return;
  }
  last_process_sample_us_.assign(device_count_, 0);
  for (unsigned i = 0; i < device_count_; ++i) {
    names_.push_back(device_text(*api, i, api->name));
    uuids_.push_back(device_text(*api, i, api->uuid));
  }
  api_ = std::move(api);
}

Nvml::~Nvml() {
  if (api_) api_->shutdown();
  if (library_) ::dlclose(library_);
}

void Nvml::disable(std::string reason) {
  reason_ = std::move(reason);
  if (api_) api_->shutdown();
  api_.reset();
}

std::optional<std::vector<GpuReading>> Nvml::read(Queries queries) {
  if (!api_) return std::nullopt;
  std::vector<GpuReading> gpus;
  for (unsigned i = 0; i < device_count_; ++i) {
    int error = kSuccess;
    GpuReading gpu = read_device(i, queries, error);
    if (error != kSuccess) {
      disable(fmt::format("GPU {} stopped answering: {}", i, api_->describe(error)));
      return std::nullopt;
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

GpuReading Nvml::read_device(unsigned index, Queries queries, int& error) {
  const Api& api = *api_;
  GpuReading gpu;
  gpu.index = index;
  gpu.name = names_[index];
  gpu.uuid = uuids_[index];
  NvmlDevice device = nullptr;
  if (NvmlReturn code = api.handle_by_index(index, &device); code != kSuccess) {
    error = code;
    return gpu;
  }
  if (auto u = query<Utilization>(error, [&](Utilization* v) { return api.utilization(device, v); })) {
    gpu.util_percent = u->gpu;
    gpu.memory_util_percent = u->memory;
  }
  if (auto m = query<Memory>(error, [&](Memory* v) { return api.memory(device, v); })) {
    gpu.memory_used_bytes = m->used;
    gpu.memory_total_bytes = m->total;
  }
  if (!queries.slow) return gpu;
  gpu.sm_clock_mhz = as_double(query<unsigned>(error, [&](unsigned* v) { return api.clock(device, kClockSm, v); }));
  gpu.power_watts = as_double(query<unsigned>(error, [&](unsigned* v) { return api.power(device, v); }), 1e-3);
  gpu.temperature_c = as_double(
      query<unsigned>(error, [&](unsigned* v) { return api.temperature(device, kTemperatureGpu, v); }));
  if (queries.pcie) {
    gpu.pcie_rx_bytes_per_s = as_double(
        query<unsigned>(error, [&](unsigned* v) { return api.pcie(device, kPcieRxBytes, v); }), 1024);
    gpu.pcie_tx_bytes_per_s = as_double(
        query<unsigned>(error, [&](unsigned* v) { return api.pcie(device, kPcieTxBytes, v); }), 1024);
  }
  gpu.processes = compute_processes(api, device);
  if (queries.process_utilization) {
    add_process_utilization(api, device, last_process_sample_us_[index], gpu.processes);
  }
  return gpu;
}

}  // namespace stepscope
