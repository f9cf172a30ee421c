#include "collectors/gpu/file_decoder.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace stepscope::gpu {

namespace {

template <typename T>
T take(std::string_view& data) {
  T value;
  std::memcpy(&value, data.data(), sizeof(T));
  data.remove_prefix(sizeof(T));
  return value;
}

bool is_activity(uint8_t type) {
  return type >= static_cast<uint8_t>(RecordType::kApiCall) &&
         type <= static_cast<uint8_t>(RecordType::kContext);
}

Activity decode_activity(RecordType type, std::string_view payload) {
  Activity a;
  a.type = type;
  a.start_ns = take<int64_t>(payload);
  a.end_ns = take<int64_t>(payload);
  a.device = take<uint32_t>(payload);
  a.context = take<uint32_t>(payload);
  a.track = take<int64_t>(payload);
  a.correlation = take<uint32_t>(payload);
  a.bytes = take<uint64_t>(payload);
  a.name = take<uint32_t>(payload);
  for (uint8_t& s : a.sub) s = take<uint8_t>(payload);
  a.id = take<uint32_t>(payload);
  return a;
}

}  // namespace

void FileDecoder::fail(const std::string& what) {
  error_ = fmt::format("{}: byte {}: {}", path_, consumed_, what);
  pending_.clear();
}

void FileDecoder::feed(std::string_view bytes, std::vector<Record>& out) {
  if (!error_.empty()) return;
  pending_.append(bytes);
  if (pid_ == 0 && !read_header()) return;
  std::string_view data = pending_;
  while (error_.empty() && decode_one(data, out)) {
  }
  if (error_.empty()) pending_.erase(0, pending_.size() - data.size());
}

bool FileDecoder::read_header() {
  if (pending_.size() < kFileHeaderSize) {
    size_t n = std::min(pending_.size(), kFileMagic.size());
    if (std::string_view(pending_).substr(0, n) != kFileMagic.substr(0, n)) {
      fail("not a stepscope GPU activity file (bad magic)");
    }
    return false;
  }
  std::string_view data = pending_;
  if (data.substr(0, kFileMagic.size()) != kFileMagic) {
    fail("not a stepscope GPU activity file (bad magic)");
    return false;
  }
  data.remove_prefix(kFileMagic.size());
  int64_t pid = take<int64_t>(data);
  if (pid <= 0) {
    fail(fmt::format("bad pid {} in the header", pid));
    return false;
  }
  pid_ = pid;
  pending_.erase(0, kFileHeaderSize);
  consumed_ += kFileHeaderSize;
  return true;
}

// Decodes one record from the front of `data`; false when it is incomplete
// (or bad, with error_ set).
bool FileDecoder::decode_one(std::string_view& data, std::vector<Record>& out) {
  if (data.size() < kRecordHeaderSize) return false;
  std::string_view header = data;
  uint32_t length = take<uint32_t>(header);
  uint8_t type = take<uint8_t>(header);
  if (length > kMaxRecordPayload) {
    fail(fmt::format("record length {} is over the limit of {}", length, kMaxRecordPayload));
    return false;
  }
  if (header.size() < length) return false;
  std::string_view payload = header.substr(0, length);
  if (is_activity(type)) {
    if (length != kActivityPayload) {
      fail(fmt::format("activity record of type {} has length {}, not {}", type, length, kActivityPayload));
      return false;
    }
    out.emplace_back(decode_activity(static_cast<RecordType>(type), payload));
  } else if (type == static_cast<uint8_t>(RecordType::kClock)) {
    if (length != kClockPayload) {
      fail(fmt::format("clock record has length {}, not {}", length, kClockPayload));
      return false;
    }
    Clock c;
    c.activity_ns = take<int64_t>(payload);
    c.monotonic_ns = take<int64_t>(payload);
    c.activity_is_monotonic = take<uint8_t>(payload);
    out.emplace_back(c);
  } else if (type == static_cast<uint8_t>(RecordType::kString) ||
             type == static_cast<uint8_t>(RecordType::kNote)) {
    if (length < 4) {
      fail(fmt::format("text record has length {}, under 4", length));
      return false;
    }
    TextRecord t;
    t.type = static_cast<RecordType>(type);
    t.id = take<uint32_t>(payload);
    t.text = std::string(payload);
    out.emplace_back(std::move(t));
  } else {
    fail(fmt::format("unknown record type {}", type));
    return false;
  }
  data.remove_prefix(kRecordHeaderSize + length);
  consumed_ += kRecordHeaderSize + length;
  return true;
}

}  // namespace stepscope::gpu
