#include "cupti/cupti_encode.hpp"

#include <string>

#include "collectors/gpu/records.hpp"

namespace stepscope::cupti {

namespace {

using gpu::Activity;
using gpu::RecordType;

int64_t ns(uint64_t timestamp) { return static_cast<int64_t>(timestamp); }

// Kernels, copies and memsets share these fields under the same names.
template <typename DeviceRecord>
void take_device_fields(const DeviceRecord& record, Activity& a) {
  a.start_ns = ns(record.start);
  a.end_ns = ns(record.end);
  a.device = record.deviceId;
  a.context = record.contextId;
  a.track = record.streamId;
  a.correlation = record.correlationId;
}

int64_t thread_of(CUpti_ActivityObjectKind kind, const CUpti_ActivityObjectKindId& id) {
  return kind == CUPTI_ACTIVITY_OBJECT_THREAD ? static_cast<int64_t>(id.pt.threadId) : 0;
}

const char* overhead_name(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "CUPTI overhead: driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI overhead: buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI overhead: instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI overhead: resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "CUPTI overhead: module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "CUPTI overhead: lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "CUPTI overhead: command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "CUPTI overhead: activity buffer request";
    default: return "CUPTI overhead";
  }
}

gpu::MarkerPhase marker_phase(CUpti_ActivityFlag flags) {
  if (flags & CUPTI_ACTIVITY_FLAG_MARKER_START) return gpu::MarkerPhase::kStart;
  if (flags & CUPTI_ACTIVITY_FLAG_MARKER_END) return gpu::MarkerPhase::kEnd;
  return gpu::MarkerPhase::kInstant;
}

}  // namespace

std::string_view strip_version_suffix(std::string_view name) {
  size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 == name.size()) return name;
  for (char c : name.substr(v + 2)) {
    if (c < '0' || c > '9') return name;
  }
  return name.substr(0, v);
}

uint32_t Encoder::intern(std::string_view text, std::string& out) {
  auto [found, inserted] = strings_.try_emplace(std::string(text), static_cast<uint32_t>(strings_.size() + 1));
  if (inserted) gpu::append_string(out, found->second, text);
  return found->second;
}

uint32_t Encoder::api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::string& out) {
  uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  auto found = api_names_.find(key);
  if (found != api_names_.end()) return found->second;
  const char* name = api_namer_ ? api_namer_(domain, cbid) : nullptr;
  std::string text = name ? std::string(strip_version_suffix(name)) : "cbid " + std::to_string(cbid);
  uint32_t id = intern(text, out);
  api_names_.emplace(key, id);
  return id;
}

bool Encoder::encode(const CUpti_Activity* record, std::string& out) {
  Activity a;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      a.type = RecordType::kKernel;
      take_device_fields(*k, a);
      a.name = intern(k->name ? k->name : "(unnamed kernel)", out);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      a.type = RecordType::kMemcpy;
      take_device_fields(*m, a);
      a.bytes = m->bytes;
      a.sub[0] = m->copyKind;
      a.sub[1] = m->srcKind;
      a.sub[2] = m->dstKind;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      a.type = RecordType::kMemset;
      take_device_fields(*m, a);
      a.bytes = m->bytes;
      a.sub[0] = static_cast<uint8_t>(m->memoryKind);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      a.type = RecordType::kApiCall;
      a.start_ns = ns(api->start);
      a.end_ns = ns(api->end);
      a.track = api->threadId;
      a.correlation = api->correlationId;
      a.sub[0] = static_cast<uint8_t>(runtime ? gpu::ApiDomain::kRuntime : gpu::ApiDomain::kDriver);
      a.name = api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, api->cbid, out);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      a.type = RecordType::kSync;
      a.start_ns = ns(s->start);
      a.end_ns = ns(s->end);
      a.context = s->contextId;
      a.track = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? gpu::kNoStream : s->streamId;
      a.correlation = s->correlationId;
      a.sub[0] = static_cast<uint8_t>(s->type);
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      a.track = thread_of(o->objectKind, o->objectId);
      if (a.track == 0) return false;  // device-side overhead has no host thread to live on
      a.type = RecordType::kOverhead;
      a.start_ns = ns(o->start);
      a.end_ns = ns(o->end);
      a.name = intern(overhead_name(o->overheadKind), out);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      a.type = RecordType::kMarker;
      a.start_ns = a.end_ns = ns(m->timestamp);
      a.track = thread_of(m->objectKind, m->objectId);
      a.id = m->id;
      a.sub[0] = static_cast<uint8_t>(marker_phase(m->flags));
      if (m->name) a.name = intern(m->name, out);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(record);
      a.type = RecordType::kContext;
      a.context = c->contextId;
      a.device = c->deviceId;
      break;
    }
    default:
      return false;
  }
  gpu::append_activity(out, a);
  return true;
}

}  // namespace stepscope::cupti
