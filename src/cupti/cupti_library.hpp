// Finding and loading the process's own libcupti at run time: the injected
// library links no CUPTI, so it carries no hard dependency and uses the CUPTI
// that matches the CUDA runtime the program loaded.
#pragma once

#include <cupti.h>

#include <string>

namespace stepscope::cupti {

// The CUPTI entry points the collector calls; null when the library lacks one.
struct Api {
  void* handle = nullptr;
  std::string path;
  CUptiResult (*getVersion)(uint32_t*) = nullptr;
  CUptiResult (*getResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*finalize)() = nullptr;
  CUptiResult (*getCallbackName)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult (*setThreadIdType)(CUpti_ActivityThreadIdType) = nullptr;
  CUptiResult (*registerTimestampCallback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult (*registerCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*enableRuntimeApi)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult (*enableDriverApi)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult (*getNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*getNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*flushAll)(uint32_t) = nullptr;
  CUptiResult (*getTimestamp)(uint64_t*) = nullptr;
};

// Loads libcupti: STEPSCOPE_LIBCUPTI when set; else one already loaded;
// else the one beside the loaded libcudart (a CUDA toolkit's
// extras/CUPTI/lib64, or NVIDIA's PyPI wheels: nvidia/cu13/lib, or
// nvidia/cuda_cupti/lib beside nvidia/cuda_runtime/lib); else the sonames
// libcupti.so.13 and libcupti.so.12 as the loader finds them. On failure
// returns false and says why in `error`.
bool load_api(Api& api, std::string& error);

// A CUPTI result as text ("CUPTI_ERROR_NOT_INITIALIZED").
std::string result_text(const Api& api, CUptiResult result);

}  // namespace stepscope::cupti
