// A file descriptor that closes itself: the one way the collectors keep
// /proc files open between reads.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace stepscope {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  // Opens `path` read-only (close-on-exec, plus `flags`); invalid on
  // failure, with errno saying why.
  static UniqueFd open_read_only(const char* path, int flags = 0) noexcept {
    return UniqueFd(::open(path, O_RDONLY | O_CLOEXEC | flags));
  }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  // Closes the descriptor held, if any, and holds `fd` instead.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace stepscope
