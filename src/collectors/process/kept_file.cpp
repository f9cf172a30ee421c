#include "collectors/process/kept_file.hpp"

#include <unistd.h>

namespace stepscope {

namespace {

// Most /proc files fit in a page; /proc/stat of a many-core machine and
// memory.stat do not, and the buffer then doubles once and stays.
constexpr size_t kFirstCapacity = 4096;

}  // namespace

std::optional<std::string_view> KeptFile::read() {
  if (!fd_.valid()) {
    fd_ = UniqueFd::open_read_only(path_.c_str());
    if (!fd_.valid()) return std::nullopt;
  }
  if (buffer_.empty()) buffer_.resize(kFirstCapacity);
  // The first pread from offset 0 restarts the kernel's formatting; the
  // following ones continue where it stopped (a seq_file hands out at most
  // a page per read for files listed record by record), until 0 says the end.
  size_t length = 0;
  for (;;) {
    if (length == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const size_t room = buffer_.size() - length;
    ssize_t n = ::pread(fd_.get(), buffer_.data() + length, room, static_cast<off_t>(length));
    if (n < 0) {
      close();
      return std::nullopt;
    }
    if (n == 0) break;
    length += static_cast<size_t>(n);
    if (shape_ == Shape::kWhole && static_cast<size_t>(n) < room) break;  // all of it: no read for the 0
  }
  return std::string_view(buffer_.data(), length);
}

}  // namespace stepscope
