// Scheduler states of sampled threads, read at every sample.
//
// Opening /proc/PID/task/TID/stat costs more than reading it, and the
// recorder reads it for every thread at every round, so descriptors are kept
// open and re-read with pread; a thread's descriptor is closed when the
// thread is gone (the read fails) or its process is forgotten.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace stepscope {

class ThreadStateReader {
 public:
  ThreadStateReader() = default;
  ~ThreadStateReader();
  ThreadStateReader(const ThreadStateReader&) = delete;
  ThreadStateReader& operator=(const ThreadStateReader&) = delete;

  // The state letter (R, S, D, ...) of the thread, or nullopt when it is gone.
  std::optional<char> read(pid_t pid, int64_t tid);

  // Closes the descriptors of every thread of `pid`.
  void forget_process(pid_t pid);

 private:
  // Far above real thread counts; past it, descriptors are not kept.
  static constexpr size_t kMaxOpen = 4096;
  std::map<std::pair<pid_t, int64_t>, int> files_;
};

}  // namespace stepscope
