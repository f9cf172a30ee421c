#include "util/byte_stream.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/gzip_decoder.hpp"
#include "util/mapped_file.hpp"

namespace stepscope {

namespace {

[[noreturn]] void throw_cannot_read(const std::string& name, int error_number) {
  throw InputError(fmt::format("cannot read {}: {}", name, std::strerror(error_number)));
}

class FileSource : public RawSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  ~FileSource() override { ::close(fd_); }

  int fd() const { return fd_; }

  size_t read(char* destination, size_t count) override {
    for (;;) {
      ssize_t got = ::read(fd_, destination, std::min<size_t>(count, INT_MAX));
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) throw_cannot_read(path_, errno);
    }
  }

 private:
  int fd_;
  std::string path_;
};

// A mapped file read as memory; what read() has passed is dropped from
// memory as it goes, so a reader that copies keeps the RSS of one.
class MappedSource : public RawSource {
 public:
  explicit MappedSource(MappedFile file) : file_(std::move(file)), rest_(file_.bytes()) {}
  size_t read(char* destination, size_t count) override {
    size_t n = std::min(count, rest_.size());
    std::memcpy(destination, rest_.data(), n);
    rest_.remove_prefix(n);
    file_.release_before(rest_.data());
    return n;
  }
  MappedFile& file() { return file_; }
  // Whether read() has handed out nothing but the first `head` bytes.
  bool at(size_t head) const { return rest_.size() + head == file_.bytes().size(); }
  void skip_to_end() { rest_ = rest_.substr(rest_.size()); }

 private:
  MappedFile file_;
  std::string_view rest_;
};

class MemorySource : public RawSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* destination, size_t count) override {
    size_t n = std::min(count, bytes_.size());
    std::memcpy(destination, bytes_.data(), n);
    bytes_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view bytes_;
};

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

ByteStream ByteStream::open_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_cannot_read(path, errno);
  auto source = std::make_unique<FileSource>(fd, path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw_cannot_read(path, errno);
  if (S_ISDIR(info.st_mode)) throw_cannot_read(path, EISDIR);
  uint64_t size = S_ISREG(info.st_mode) ? static_cast<uint64_t>(info.st_size) : 0;
  return ByteStream(std::move(source), path, size);
}

ByteStream ByteStream::map_file(const std::string& path) {
  ByteStream stream = open_file(path);
  if (stream.gzip_ || stream.size_hint_ == 0) return stream;  // gzip, or not a regular file
  const auto& file = static_cast<const FileSource&>(*stream.raw_);  // what open_file made
  std::optional<MappedFile> mapped = MappedFile::map(file.fd(), stream.size_hint_);
  if (!mapped) return stream;
  auto source = std::make_unique<MappedSource>(std::move(*mapped));
  MappedFile* mapping = &source->file();
  return ByteStream(std::move(source), path, stream.size_hint_, mapping);
}

ByteStream ByteStream::from_memory(std::string_view bytes, const std::string& source_name) {
  return ByteStream(std::make_unique<MemorySource>(bytes), source_name, bytes.size());
}

ByteStream::ByteStream(std::unique_ptr<RawSource> raw, std::string name, uint64_t size_hint, MappedFile* mapped)
    : raw_(std::move(raw)), name_(std::move(name)), size_hint_(size_hint), mapped_(mapped) {
  // Sniff the magic; a one-byte file needs a second read to be sure.
  while (head_size_ < 2) {
    size_t got = raw_->read(head_ + head_size_, 2 - head_size_);
    if (got == 0) break;
    head_size_ += got;
  }
  if (is_gzip(std::string_view(head_, head_size_))) gzip_ = std::make_unique<GzipDecoder>(name_);
}

ByteStream::ByteStream(ByteStream&&) noexcept = default;
ByteStream& ByteStream::operator=(ByteStream&&) noexcept = default;
ByteStream::~ByteStream() = default;

std::string_view ByteStream::take_mapped() {
  if (mapped_ == nullptr || gzip_) return {};
  if (!mapped_taken_) {
    auto& source = static_cast<MappedSource&>(*raw_);  // what map_file made
    if (head_pos_ != 0 || !source.at(head_size_)) return {};  // read() has handed some out
    head_pos_ = head_size_;
    source.skip_to_end();
    mapped_taken_ = true;
  }
  return mapped_->bytes();
}

void ByteStream::release_mapped_before(const char* position) noexcept {
  if (mapped_ != nullptr) mapped_->release_before(position);
}

void ByteStream::release_mapped() noexcept {
  if (mapped_ != nullptr) mapped_->release_all();
}

size_t ByteStream::read_raw(char* destination, size_t count) {
  if (count == 0) return 0;
  size_t n = 0;
  if (head_pos_ < head_size_) {
    n = std::min(count, head_size_ - head_pos_);
    std::memcpy(destination, head_ + head_pos_, n);
    head_pos_ += n;
    if (n == count) return n;
  }
  return n + raw_->read(destination + n, count - n);
}

size_t ByteStream::read(char* destination, size_t count) {
  if (!gzip_) return read_raw(destination, count);
  return gzip_->read(destination, count, [this](char* to, size_t n) { return read_raw(to, n); });
}

}  // namespace stepscope
