// libstepscope-cupti.so: loaded into every process of a recorded command that
// initializes CUDA (CUDA_INJECTION64_PATH; `record --gpu`). It gathers
// activity with CUPTI and streams it to STEPSCOPE_GPU_DIR/PID.gpu in the
// portable format of collectors/gpu/records.hpp; the recorder reads it.
//
// It prints nothing, except one line when another CUPTI client holds the
// process (then it steps aside). Everything else it has to say goes into the
// file as a note, which `record` shows at the end. When torch.profiler is
// about to collect CUDA activity in the process, stepscope's Python hook asks
// it to hand CUPTI over (stepscope_release_cupti), since CUDA allows one client.
//
// The state is one process-wide object: CUDA calls InitializeInjection once
// per process, and CUPTI's buffer callbacks carry no user pointer.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <cupti.h>

#include "collectors/gpu/records.hpp"
#include "cupti/cupti_encode.hpp"
#include "cupti/cupti_library.hpp"

#define STEPSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace stepscope::cupti {

namespace {

constexpr size_t kBufferSize = 4u << 20;
constexpr auto kFlushPeriod = std::chrono::milliseconds(200);

// Calls that run thousands of times a step and say nothing about the GPU's
// work; tracing them would cost more than they show.
constexpr CUpti_CallbackId kNoisyRuntimeCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
};
constexpr CUpti_CallbackId kNoisyDriverCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,
    CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2,
    CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetStreamPriorityRange,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion,
    CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress,
    CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGetExportTable,
    CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes,
    CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo,
    CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
    CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,
    CUPTI_DRIVER_TRACE_CBID_cuEventQuery,
    CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
};
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,          CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_CONTEXT,
};

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void subscriber_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

class Collector {
 public:
  static Collector& get() {
    static Collector* collector = new Collector;  // never destroyed: CUPTI may call in during exit
    return *collector;
  }

  int initialize();
  int initialize_nvtx(const void* export_table);
  void buffer_completed(uint8_t* buffer, size_t valid_size);
  void at_exit();
  int release(const char* to_whom);
  void forked_child() { active_ = false; }

 private:
  Collector() : encoder_([this](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) -> const char* {
    const char* name = nullptr;
    if (api_.getCallbackName) api_.getCallbackName(domain, cbid, &name);
    return name;
  }) {}

  bool open_file(const char* dir);
  bool load();
  bool subscribe();
  void enable();
  void start_flusher();
  void stop_flusher();
  void close_file();
  void note(const std::string& text);
  void write_locked(const std::string& bytes);
  void append_clock(std::string& out);
  bool owned() const { return active_ && owner_ == getpid(); }

  Api api_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool loaded_ = false;
  std::string load_error_;
  Encoder encoder_;
  std::mutex mutex_;  // the file and the encoder's strings
  int fd_ = -1;
  pid_t owner_ = 0;
  std::atomic<bool> active_{false};
  bool monotonic_stamps_ = false;
  size_t dropped_ = 0;
  std::mutex flusher_mutex_;
  std::condition_variable flusher_wake_;
  bool stopping_ = false;
  std::thread flusher_;
};

bool Collector::open_file(const char* dir) {
  owner_ = getpid();
  std::string path = std::string(dir) + "/" + std::to_string(owner_) + ".gpu";
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) return false;
  std::string header;
  gpu::append_file_header(header, owner_);
  write_locked(header);
  return true;
}

void Collector::write_locked(const std::string& bytes) {
  size_t done = 0;
  while (fd_ >= 0 && done < bytes.size()) {
    ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // disk full or gone: stop, the recorder keeps what arrived
      close(fd_);
      fd_ = -1;
      active_ = false;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

void Collector::note(const std::string& text) {
  std::string out;
  gpu::append_note(out, text);
  std::lock_guard lock(mutex_);
  write_locked(out);
}

bool Collector::load() {
  if (!loaded_ && load_error_.empty()) loaded_ = load_api(api_, load_error_);
  return loaded_;
}

void Collector::append_clock(std::string& out) {
  uint64_t activity = 0;
  if (!monotonic_stamps_ && api_.getTimestamp) api_.getTimestamp(&activity);
  uint64_t now = monotonic_ns();
  gpu::append_clock(out, gpu::Clock{static_cast<int64_t>(monotonic_stamps_ ? now : activity),
                                    static_cast<int64_t>(now), static_cast<uint8_t>(monotonic_stamps_)});
}

// CUDA 13 allows one CUPTI subscriber per process; nsys, Nsight Compute and
// torch.profiler are the usual other ones.
bool Collector::subscribe() {
  CUpti_SubscriberHandle handle = nullptr;
  char holder[256] = {};
  CUptiResult result;
  if (api_.subscribe_v2) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "stepscope";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof holder;
    result = api_.subscribe_v2(&handle, subscriber_callback, nullptr, &params);
  } else {
    result = api_.subscribe(&handle, subscriber_callback, nullptr);
  }
  if (result == CUPTI_SUCCESS) {
    subscriber_ = handle;
    return true;
  }
  std::string why;
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    why = std::string("CUPTI is already held by ") + (holder[0] ? holder : "another tool (nsys, ncu or a profiler)") +
          "; this process is recorded without GPU activity";
    std::fprintf(stderr, "stepscope: pid %d: %s\n", static_cast<int>(owner_), why.c_str());
  } else {
    why = "cuptiSubscribe failed: " + result_text(api_, result);
  }
  note(why);
  return false;
}

void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferSize));
  *size = *buffer ? kBufferSize : 0;
  *max_records = 0;
}

void buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  Collector::get().buffer_completed(buffer, valid_size);
  std::free(buffer);
}

uint64_t monotonic_timestamp() { return monotonic_ns(); }

void Collector::enable() {
  if (api_.setThreadIdType) api_.setThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  monotonic_stamps_ = api_.registerTimestampCallback &&
                      api_.registerTimestampCallback(monotonic_timestamp) == CUPTI_SUCCESS;
  api_.registerCallbacks(buffer_requested, cupti::buffer_completed);
  std::string refused;
  for (CUpti_ActivityKind kind : kKinds) {
    CUptiResult result = api_.enable(kind);
    if (result != CUPTI_SUCCESS) refused += " " + std::to_string(kind) + " (" + result_text(api_, result) + ")";
  }
  if (!refused.empty()) note("CUPTI refused to collect activity kinds" + refused);
  for (CUpti_CallbackId cbid : kNoisyRuntimeCalls) {
    if (api_.enableRuntimeApi) api_.enableRuntimeApi(cbid, 0);
  }
  for (CUpti_CallbackId cbid : kNoisyDriverCalls) {
    if (api_.enableDriverApi) api_.enableDriverApi(cbid, 0);
  }
  std::string clock;
  append_clock(clock);
  std::lock_guard lock(mutex_);
  write_locked(clock);
}

void Collector::start_flusher() {
  flusher_ = std::thread([this] {
    std::unique_lock lock(flusher_mutex_);
    while (!stopping_) {
      flusher_wake_.wait_for(lock, kFlushPeriod);
      if (stopping_ || !owned()) break;
      lock.unlock();
      api_.flushAll(0);
      lock.lock();
    }
  });
}

int Collector::initialize() {
  const char* dir = std::getenv("STEPSCOPE_GPU_DIR");
  if (!dir || !*dir) return 1;  // loaded outside `stepscope record`: stay out of the way
  if (fd_ >= 0 || !open_file(dir)) return 1;
  // Set by the Python hook when torch.profiler asked for CUPTI before CUDA
  // started in this process: it was first, so it keeps CUPTI.
  if (const char* holder = std::getenv("STEPSCOPE_GPU_YIELD"); holder && *holder) {
    note(std::string("CUPTI left to ") + holder + ", which asked for it first: this process is recorded without GPU activity");
    return 1;
  }
  active_ = true;
  if (!load()) {
    note(load_error_);
    active_ = false;
    return 1;
  }
  if (!subscribe()) {
    active_ = false;
    return 1;
  }
  enable();
  pthread_atfork(nullptr, nullptr, [] { Collector::get().forked_child(); });
  std::atexit([] { Collector::get().at_exit(); });
  start_flusher();
  return 1;
}

void Collector::buffer_completed(uint8_t* buffer, size_t valid_size) {
  if (!owned() || !buffer) return;
  std::string out;
  out.reserve(valid_size / 2);
  CUpti_Activity* record = nullptr;
  std::lock_guard lock(mutex_);
  while (api_.getNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) encoder_.encode(record, out);
  append_clock(out);
  size_t dropped = 0;
  if (api_.getNumDroppedRecords && api_.getNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped) {
    dropped_ += dropped;
    gpu::append_note(out, "CUPTI dropped " + std::to_string(dropped_) + " activity records (buffers full)");
  }
  write_locked(out);
}

void Collector::stop_flusher() {
  {
    std::lock_guard lock(flusher_mutex_);
    stopping_ = true;
  }
  flusher_wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
}

void Collector::close_file() {
  std::lock_guard lock(mutex_);
  active_ = false;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void Collector::at_exit() {
  if (!owned()) return;
  stop_flusher();
  api_.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  close_file();
}

// What was recorded so far is flushed and kept; then CUPTI is detached
// (cuptiFinalize), which also drops this library's buffer and timestamp
// callbacks, so the next client starts from CUPTI's defaults. The caller has
// synchronized the device, as CUPTI asks before a detach.
int Collector::release(const char* to_whom) {
  if (!owned()) return 0;
  stop_flusher();
  if (api_.disable) {
    for (CUpti_ActivityKind kind : kKinds) api_.disable(kind);
  }
  api_.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (api_.unsubscribe && subscriber_) api_.unsubscribe(subscriber_);
  subscriber_ = nullptr;
  CUptiResult detached = api_.finalize ? api_.finalize() : CUPTI_ERROR_NOT_SUPPORTED;
  std::string who = to_whom && *to_whom ? to_whom : "another CUPTI client";
  note("CUPTI handed to " + who + ": GPU activity from then on is in its trace, not in this run" +
       (detached == CUPTI_SUCCESS ? "" : " (cuptiFinalize: " + result_text(api_, detached) + ")"));
  close_file();
  return 1;
}

// NVTX calls this with its export table when NVTX_INJECTION64_PATH names this
// library; CUPTI's own implementation turns NVTX ranges into marker records.
int Collector::initialize_nvtx(const void* export_table) {
  const char* dir = std::getenv("STEPSCOPE_GPU_DIR");
  if (!dir || !*dir || !load()) return 0;
  using Init = int (*)(const void*);
  auto init = reinterpret_cast<Init>(dlsym(api_.handle, "InitializeInjectionNvtx2"));
  return init ? init(export_table) : 0;
}

}  // namespace

}  // namespace stepscope::cupti

STEPSCOPE_EXPORT int InitializeInjection(void) { return stepscope::cupti::Collector::get().initialize(); }

// Called through ctypes by stepscope's Python hook (python/stepscope/_cupti.py)
// just before torch.profiler starts collecting CUDA activity. Returns 1 when
// this process's CUPTI was handed over, 0 when the library held none.
STEPSCOPE_EXPORT int stepscope_release_cupti(const char* to_whom) {
  return stepscope::cupti::Collector::get().release(to_whom);
}

STEPSCOPE_EXPORT int InitializeInjectionNvtx2(const void* export_table) {
  return stepscope::cupti::Collector::get().initialize_nvtx(export_table);
}
