#include "cupti/cupti_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace stepscope::cupti {

namespace {

constexpr const char* kSonames[] = {"libcupti.so.13", "libcupti.so.12"};

// Folders of the loaded libcudart: where a matching libcupti usually lives.
std::vector<std::string> runtime_dirs() {
  std::vector<std::string> dirs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        size_t slash = path.rfind('/');
        if (slash != std::string::npos && path.find("libcudart.so", slash) != std::string::npos) {
          static_cast<std::vector<std::string>*>(data)->push_back(path.substr(0, slash));
        }
        return 0;
      },
      &dirs);
  return dirs;
}

std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  for (const std::string& dir : runtime_dirs()) {
    for (const char* soname : kSonames) {
      paths.push_back(dir + "/" + soname);                          // nvidia/cu13/lib
      paths.push_back(dir + "/../../cuda_cupti/lib/" + soname);     // nvidia/cuda_runtime/lib (CUDA 12 wheels)
      paths.push_back(dir + "/../extras/CUPTI/lib64/" + soname);    // a toolkit's lib64
    }
  }
  for (const char* soname : kSonames) paths.emplace_back(soname);
  for (const char* soname : kSonames) paths.push_back(std::string("/usr/local/cuda/extras/CUPTI/lib64/") + soname);
  return paths;
}

void* open_cupti(std::string& path) {
  if (const char* env = std::getenv("STEPSCOPE_LIBCUPTI"); env && *env) {
    path = env;
    return dlopen(env, RTLD_NOW | RTLD_LOCAL);
  }
  for (const char* soname : kSonames) {
    if (void* loaded = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
      path = soname;
      return loaded;
    }
  }
  for (const std::string& candidate : candidates()) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = candidate;
      return handle;
    }
  }
  return nullptr;
}

template <typename F>
void bind(void* handle, F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

bool load_api(Api& api, std::string& error) {
  api.handle = open_cupti(api.path);
  if (!api.handle && !api.path.empty()) {
    const char* why = dlerror();
    error = "no libcupti found: STEPSCOPE_LIBCUPTI=" + api.path + " does not load" + (why ? std::string(": ") + why : "");
    return false;
  }
  if (!api.handle) {
    error = "no libcupti found (looked beside the loaded libcudart and for libcupti.so.13/.12; "
            "set STEPSCOPE_LIBCUPTI to its path)";
    return false;
  }
  bind(api.handle, api.getVersion, "cuptiGetVersion");
  bind(api.handle, api.getResultString, "cuptiGetResultString");
  bind(api.handle, api.subscribe, "cuptiSubscribe");
  bind(api.handle, api.subscribe_v2, "cuptiSubscribe_v2");
  bind(api.handle, api.unsubscribe, "cuptiUnsubscribe");
  bind(api.handle, api.finalize, "cuptiFinalize");
  bind(api.handle, api.getCallbackName, "cuptiGetCallbackName");
  bind(api.handle, api.setThreadIdType, "cuptiSetThreadIdType");
  bind(api.handle, api.registerTimestampCallback, "cuptiActivityRegisterTimestampCallback");
  bind(api.handle, api.registerCallbacks, "cuptiActivityRegisterCallbacks");
  bind(api.handle, api.enable, "cuptiActivityEnable");
  bind(api.handle, api.disable, "cuptiActivityDisable");
  bind(api.handle, api.enableRuntimeApi, "cuptiActivityEnableRuntimeApi");
  bind(api.handle, api.enableDriverApi, "cuptiActivityEnableDriverApi");
  bind(api.handle, api.getNextRecord, "cuptiActivityGetNextRecord");
  bind(api.handle, api.getNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  bind(api.handle, api.flushAll, "cuptiActivityFlushAll");
  bind(api.handle, api.getTimestamp, "cuptiGetTimestamp");
  if (!api.registerCallbacks || !api.enable || !api.getNextRecord || !api.flushAll ||
      (!api.subscribe && !api.subscribe_v2)) {
    error = api.path + " lacks the CUPTI activity API";
    return false;
  }
  return true;
}

std::string result_text(const Api& api, CUptiResult result) {
  const char* text = nullptr;
  if (api.getResultString && api.getResultString(result, &text) == CUPTI_SUCCESS && text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

}  // namespace stepscope::cupti
