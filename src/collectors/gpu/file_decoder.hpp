// Reads the GPU activity files the injected CUPTI library writes
// (collectors/gpu/records.hpp), incrementally: the recorder feeds the bytes a
// file grew by since the last poll, and a record cut in the middle waits for
// the rest. The files come from the recorded program, so they are untrusted:
// bad data stops the decoding of that file with an error naming the file and
// byte offset, and never throws into the recording loop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "collectors/gpu/records.hpp"

namespace stepscope::gpu {

// A kString or kNote record.
struct TextRecord {
  RecordType type = RecordType::kString;
  uint32_t id = 0;
  std::string text;
};

using Record = std::variant<Activity, Clock, TextRecord>;

class FileDecoder {
 public:
  explicit FileDecoder(std::string path) : path_(std::move(path)) {}

  // Decodes the complete records in `pending + bytes` into `out`.
  void feed(std::string_view bytes, std::vector<Record>& out);

  // The writer's pid from the header; 0 until the header is read.
  int64_t pid() const { return pid_; }
  // Empty while the file is good; else what was wrong and where.
  const std::string& error() const { return error_; }
  // Bytes of a record not yet complete: at the end of a recording, the
  // tail a killed process left.
  size_t pending_bytes() const { return pending_.size(); }
  // The file offset where the pending bytes start.
  uint64_t pending_offset() const { return consumed_; }
  const std::string& path() const { return path_; }

 private:
  bool read_header();
  bool decode_one(std::string_view& data, std::vector<Record>& out);
  void fail(const std::string& what);

  std::string path_;
  std::string pending_;
  uint64_t consumed_ = 0;
  int64_t pid_ = 0;
  std::string error_;
};

}  // namespace stepscope::gpu
