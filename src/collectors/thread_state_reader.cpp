#include "collectors/thread_state_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "collectors/proc_threads.hpp"

namespace stepscope {

namespace {

int open_stat(pid_t pid, int64_t tid) {
  std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat";
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

// A stat line fits in 512 bytes up to the state however long the name
// (the kernel caps it at 64).
std::optional<char> read_state(int fd) {
  char buffer[512];
  ssize_t n = ::pread(fd, buffer, sizeof buffer, 0);
  if (n <= 0) return std::nullopt;
  return state_in_stat(std::string_view(buffer, static_cast<size_t>(n)));
}

}  // namespace

ThreadStateReader::~ThreadStateReader() {
  for (auto& [key, fd] : files_) ::close(fd);
}

std::optional<char> ThreadStateReader::read(pid_t pid, int64_t tid) {
  auto key = std::make_pair(pid, tid);
  auto found = files_.find(key);
  if (found == files_.end()) {
    int fd = open_stat(pid, tid);
    if (fd < 0) return std::nullopt;
    if (files_.size() >= kMaxOpen) {
      auto state = read_state(fd);
      ::close(fd);
      return state;
    }
    found = files_.emplace(key, fd).first;
  }
  auto state = read_state(found->second);
  if (!state) {  // the thread exited: its descriptor now only reads errors
    ::close(found->second);
    files_.erase(found);
  }
  return state;
}

void ThreadStateReader::forget_process(pid_t pid) {
  auto it = files_.lower_bound({pid, INT64_MIN});
  while (it != files_.end() && it->first.first == pid) {
    ::close(it->second);
    it = files_.erase(it);
  }
}

}  // namespace stepscope
