// The portable record format of GPU activity files: what the injected CUPTI
// library (src/cupti) writes, one file per process, and the recorder's
// GpuSource reads. It has no CUPTI types in it, so the recorder builds and is
// tested without CUDA, and a file means the same whatever libcupti wrote it.
//
// A file is the 8-byte magic, the writer's pid (int64), then records:
// uint32 payload length, uint8 type, payload. Integers are little-endian
// (the writer and reader share a machine). Records are appended whole, so a
// file cut short by a killed process ends in at most one partial record.
// Details: docs/gpu-collector.md, "File format".
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace stepscope::gpu {

inline constexpr std::string_view kFileMagic{"SSGPU1\n\0", 8};
inline constexpr size_t kFileHeaderSize = 16;  // magic + pid
inline constexpr size_t kRecordHeaderSize = 5; // length + type
// A record larger than this is corruption, not data (kernel names are long,
// but not this long).
inline constexpr uint32_t kMaxRecordPayload = 1u << 20;

enum class RecordType : uint8_t {
  kString = 1,    // defines a string id used by later records
  kClock = 2,     // pairs the activity clock with CLOCK_MONOTONIC
  kNote = 3,      // a message of the injected library (why it stepped aside, ...)
  kApiCall = 4,   // a CUDA runtime or driver API call (host thread)
  kKernel = 5,
  kMemcpy = 6,
  kMemset = 7,
  kSync = 8,      // a synchronization (stream, event, context)
  kOverhead = 9,  // time CUPTI itself took on a host thread
  kMarker = 10,   // an NVTX range start or end, or an instant mark
  kContext = 11,  // maps a context id to its device
};

// Which API a kApiCall came from (in `sub[0]`).
enum class ApiDomain : uint8_t { kRuntime = 1, kDriver = 2 };
// A kMarker's phase (in `sub[0]`).
enum class MarkerPhase : uint8_t { kStart = 1, kEnd = 2, kInstant = 3 };
// The stream of a sync that has none (a context synchronization).
inline constexpr int64_t kNoStream = -1;

// One record of activity, the same fields for every type; unused ones stay 0.
struct Activity {
  RecordType type = RecordType::kKernel;
  int64_t start_ns = 0;     // on the activity clock (see kClock)
  int64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  int64_t track = 0;        // device work: stream id; host records: system thread id
  uint32_t correlation = 0; // pairs an API call with the device work it caused
  uint64_t bytes = 0;
  uint32_t name = 0;        // a string id; 0: none
  // kMemcpy: copy kind, source and destination memory kinds (CUPTI's enum
  // numbers); kMemset: memory kind; kSync: sync type; kApiCall: ApiDomain;
  // kMarker: MarkerPhase; kOverhead: overhead kind.
  uint8_t sub[3] = {};
  uint32_t id = 0;          // kMarker: the range id that pairs start and end
};
inline constexpr uint32_t kActivityPayload = 8 + 8 + 4 + 4 + 8 + 4 + 8 + 4 + 3 + 4;

struct Clock {
  int64_t activity_ns = 0;   // the activity clock at one instant
  int64_t monotonic_ns = 0;  // CLOCK_MONOTONIC at the same instant
  // 1 when CUPTI stamps records with CLOCK_MONOTONIC itself (a registered
  // timestamp callback): then no conversion applies.
  uint8_t activity_is_monotonic = 0;
};
inline constexpr uint32_t kClockPayload = 8 + 8 + 1;

// --- encoding (used by the injected library and by tests) -----------------

namespace detail {
template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
inline void put_header(std::string& out, RecordType type, uint32_t payload) {
  put<uint32_t>(out, payload);
  put<uint8_t>(out, static_cast<uint8_t>(type));
}
}  // namespace detail

inline void append_file_header(std::string& out, int64_t pid) {
  out.append(kFileMagic);
  detail::put<int64_t>(out, pid);
}

inline void append_activity(std::string& out, const Activity& a) {
  detail::put_header(out, a.type, kActivityPayload);
  detail::put<int64_t>(out, a.start_ns);
  detail::put<int64_t>(out, a.end_ns);
  detail::put<uint32_t>(out, a.device);
  detail::put<uint32_t>(out, a.context);
  detail::put<int64_t>(out, a.track);
  detail::put<uint32_t>(out, a.correlation);
  detail::put<uint64_t>(out, a.bytes);
  detail::put<uint32_t>(out, a.name);
  for (uint8_t s : a.sub) detail::put<uint8_t>(out, s);
  detail::put<uint32_t>(out, a.id);
}

inline void append_clock(std::string& out, const Clock& c) {
  detail::put_header(out, RecordType::kClock, kClockPayload);
  detail::put<int64_t>(out, c.activity_ns);
  detail::put<int64_t>(out, c.monotonic_ns);
  detail::put<uint8_t>(out, c.activity_is_monotonic);
}

// Texts longer than the record limit are cut (names, notes: nothing binary).
inline void append_text(std::string& out, RecordType type, uint32_t id, std::string_view text) {
  if (text.size() > kMaxRecordPayload - 4) text = text.substr(0, kMaxRecordPayload - 4);
  detail::put_header(out, type, static_cast<uint32_t>(4 + text.size()));
  detail::put<uint32_t>(out, id);
  out.append(text);
}
inline void append_string(std::string& out, uint32_t id, std::string_view text) {
  append_text(out, RecordType::kString, id, text);
}
inline void append_note(std::string& out, std::string_view text) {
  append_text(out, RecordType::kNote, 0, text);
}

}  // namespace stepscope::gpu
