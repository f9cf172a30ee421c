// A /proc, /sys or cgroup file opened once and re-read with pread.
//
// Opening such a file walks its path and builds an inode and a seq_file,
// which costs several times reading it; the monitor reads the same dozen
// files ten times a second, so it keeps them open. Reading from offset 0
// makes the kernel format the file anew, so each read sees current values.
//
// A kept descriptor of /proc/PID/... stays bound to the process it was
// opened for: once that process is reaped it reads only errors, even if the
// pid is reused. A failed read closes the descriptor, so the next read opens
// the path afresh; callers of per-process files check the process's
// identity (its start time) before trusting what a fresh open read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/unique_fd.hpp"

namespace stepscope {

class KeptFile {
 public:
  // How the kernel hands the file out. Most /proc and cgroup files are
  // formatted whole by one call (single_open: stat, meminfo, loadavg, a
  // process's stat, status, io, cgroup, a thread's schedstat, the cgroup's
  // memory files): a read with room to spare returns all of it, so one
  // pread is enough. Files listed record by record (diskstats, net/dev)
  // come at most a page per read, and are read until a read returns 0.
  enum class Shape { kRecords, kWhole };

  KeptFile() = default;
  explicit KeptFile(std::string path, Shape shape = Shape::kRecords)
      : path_(std::move(path)), shape_(shape) {}

  // The whole text of the file now, or nullopt when it cannot be opened or
  // read. The view lives until the next read() or the object's end.
  std::optional<std::string_view> read();

  void close() { fd_.reset(); }
  const std::string& path() const { return path_; }
  bool is_open() const { return fd_.valid(); }

 private:
  std::string path_;
  Shape shape_ = Shape::kRecords;
  UniqueFd fd_;
  std::vector<char> buffer_;  // grown as needed, never shrunk or cleared
};

}  // namespace stepscope
