// MappedFile and ByteStream::map_file: the contents in place with zeros
// after them (also when the file ends exactly at a page's end), pages
// dropped behind the reader and read back when touched again, and a mapped
// stream read with read() like any file.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "chrome_trace_test_support.hpp"
#include "util/bus_error.hpp"
#include "util/byte_stream.hpp"
#include "util/mapped_file.hpp"
#include "util/unique_fd.hpp"

namespace stepscope {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() / fmt::format("stepscope-mapped-{}-{}", ::getpid(), counter++);
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Text that differs at every offset, so a misplaced page shows.
std::string numbered_text(size_t size) {
  std::string text;
  for (size_t i = 0; text.size() < size; ++i) text += fmt::format("{},", i);
  text.resize(size);
  return text;
}

TEST(MappedFile, HoldsTheContentsWithZerosAfterThem) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (size_t size : {size_t{1}, page - 10, page, 3 * page, 3 * page + 1}) {
    std::string contents = numbered_text(size);
    TempFile file(contents);
    UniqueFd fd = UniqueFd::open_read_only(file.path().c_str());
    std::optional<MappedFile> mapped = MappedFile::map(fd.get(), size);
    ASSERT_TRUE(mapped.has_value()) << size;
    EXPECT_EQ(mapped->bytes(), contents);
    for (size_t i = 0; i < MappedFile::kPadding; ++i) EXPECT_EQ(mapped->bytes().data()[size + i], 0) << size;
  }
}

// A trace rewritten in place while it is imported: the kernel's SIGBUS
// becomes stepscope's one-line error and the status of bad input, not a crash.
TEST(MappedFileDeathTest, AFileThatShrinksUnderItsMappingEndsInAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  TempFile file(numbered_text(4 * page));
  EXPECT_EXIT(
      {
        exit_cleanly_on_bus_error();
        UniqueFd fd = UniqueFd::open_read_only(file.path().c_str());
        std::optional<MappedFile> mapped = MappedFile::map(fd.get(), 4 * page);
        if (!mapped || ::truncate(file.path().c_str(), 0) != 0) std::_Exit(9);
        volatile char touched = mapped->bytes()[3 * page];
        (void)touched;
        std::_Exit(0);
      },
      testing::ExitedWithCode(2), "a file shrank while stepscope read it");
}

TEST(MappedFile, DroppedPagesAreReadBackWhenTouched) {
  std::string contents = numbered_text(3 * MappedFile::kReleaseStep + 12345);
  TempFile file(contents);
  UniqueFd fd = UniqueFd::open_read_only(file.path().c_str());
  std::optional<MappedFile> mapped = MappedFile::map(fd.get(), contents.size());
  ASSERT_TRUE(mapped.has_value());
  const char* data = mapped->bytes().data();
  mapped->release_before(data + 2 * MappedFile::kReleaseStep + 7);
  mapped->release_before(data);  // going back drops nothing more
  mapped->release_before(data + contents.size());
  EXPECT_EQ(mapped->bytes(), contents);
  mapped->release_all();
  EXPECT_EQ(mapped->bytes(), contents);
  EXPECT_EQ(mapped->bytes().data()[contents.size()], 0);
}

TEST(MappedFile, AMappedStreamHandsOverItsFileInPlaceOrReadsLikeAnyFile) {
  std::string contents = numbered_text(2 * MappedFile::kReleaseStep + 99);
  TempFile file(contents);
  ByteStream taken = ByteStream::map_file(file.path());
  EXPECT_EQ(taken.take_mapped(), contents);
  char byte = 0;
  EXPECT_EQ(taken.read(&byte, 1), 0u);  // taken: read() is at the end
  EXPECT_EQ(taken.take_mapped(), contents);  // but a second reader may start over

  ByteStream read = ByteStream::map_file(file.path());
  std::string got(contents.size() + 10, '\0');
  size_t total = 0;
  for (size_t n = 0; (n = read.read(got.data() + total, 100000)) > 0;) total += n;
  got.resize(total);
  EXPECT_EQ(got, contents);
  EXPECT_EQ(read.take_mapped(), "");  // already read
}

TEST(MappedFile, GzipAndEmptyFilesAreNotMapped) {
  TempFile packed(test::gzip("[]"));
  ByteStream gzip = ByteStream::map_file(packed.path());
  EXPECT_EQ(gzip.take_mapped(), "");
  char text[8] = {};
  EXPECT_EQ(gzip.read(text, sizeof text), 2u);
  EXPECT_EQ(std::string(text, 2), "[]");
  TempFile empty("");
  EXPECT_EQ(ByteStream::map_file(empty.path()).take_mapped(), "");
}

}  // namespace
}  // namespace stepscope
