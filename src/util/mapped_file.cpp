#include "util/mapped_file.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

namespace stepscope {

namespace {

size_t page_size() {
  long size = ::sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<size_t>(size) : 4096;
}

}  // namespace

std::optional<MappedFile> MappedFile::map(int fd, uint64_t size) noexcept {
  if (size == 0 || size > SIZE_MAX - 2 * page_size()) return std::nullopt;
  size_t page = page_size();
  size_t mapped = (static_cast<size_t>(size) + kPadding + page - 1) / page * page;
  // Anonymous zero pages first, then the file over their start: the bytes
  // after the end of the file are zeros, in its last page (the kernel's)
  // or in the anonymous pages after it, never past the mapping.
  void* region = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return std::nullopt;
  void* file = ::mmap(region, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (file == MAP_FAILED) {
    ::munmap(region, mapped);
    return std::nullopt;
  }
  ::madvise(region, static_cast<size_t>(size), MADV_SEQUENTIAL);  // only advice
  return MappedFile(static_cast<char*>(region), static_cast<size_t>(size), mapped);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      released_(std::exchange(other.released_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    released_ = std::exchange(other.released_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
}

void MappedFile::release_before(const char* position) noexcept {
  if (position < data_ || position > data_ + size_) return;
  auto consumed = static_cast<size_t>(position - data_);
  size_t until = consumed / kReleaseStep * kReleaseStep;
  if (until <= released_ || until > mapped_) return;
  ::madvise(data_ + released_, until - released_, MADV_DONTNEED);  // kReleaseStep is page-aligned
  released_ = until;
}

void MappedFile::release_all() noexcept {
  if (data_ == nullptr || released_ >= mapped_) return;
  ::madvise(data_ + released_, mapped_ - released_, MADV_DONTNEED);
  released_ = mapped_;
}

}  // namespace stepscope
