#include "collectors/process/proc_dir_entries.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

namespace stepscope {

bool read_numeric_entries(int fd, std::vector<pid_t>& out) {
  out.clear();
  if (::lseek(fd, 0, SEEK_SET) != 0) return false;
  alignas(8) char buffer[4096];
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (n < 0) return false;
    if (n == 0) return true;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      std::memcpy(&reclen, buffer + at + 16, sizeof reclen);
      const char* name = buffer + at + 19;
      pid_t id = 0;
      auto [end, ec] = std::from_chars(name, name + std::strlen(name), id);
      if (ec == std::errc() && *end == '\0' && id > 0) out.push_back(id);
      at += reclen;
    }
  }
}

}  // namespace stepscope
