// CUPTI activity records -> the portable records of collectors/gpu/records.hpp.
// The one place that reads CUPTI's structs; kept apart from the injection
// (which needs a GPU) so unit tests feed it buffers of the real structs.
//
// Struct versions: CUDA 13.0's (CUpti_ActivityKernel10, Memcpy6, Memset4,
// Synchronization2, Overhead3, Marker2, Context3, API). Only fields that
// keep their place across CUPTI 12 and 13 versions are read.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace stepscope::cupti {

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI's callback names
// carry the API version; traces and users name the call without it.
std::string_view strip_version_suffix(std::string_view name);

class Encoder {
 public:
  // Resolves an API call's name; CUPTI's cuptiGetCallbackName in the library,
  // a table in tests. May return null for an unknown id.
  using ApiNamer = std::function<const char*(CUpti_CallbackDomain, CUpti_CallbackId)>;

  explicit Encoder(ApiNamer api_namer) : api_namer_(std::move(api_namer)) {}

  // Appends the portable form of `record` (and any string it introduces) to
  // `out`; false for a kind that is not collected.
  bool encode(const CUpti_Activity* record, std::string& out);

  // Forgets the strings already written: the next file starts afresh.
  void reset() {
    strings_.clear();
    api_names_.clear();
  }

 private:
  uint32_t intern(std::string_view text, std::string& out);
  uint32_t api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::string& out);

  ApiNamer api_namer_;
  std::unordered_map<std::string, uint32_t> strings_;
  std::unordered_map<uint64_t, uint32_t> api_names_;
};

}  // namespace stepscope::cupti
