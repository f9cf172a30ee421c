// The sampler's small pieces: versions, maps, memory reads, the process tree.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/process/memory.hpp"
#include "collectors/process/memory_maps.hpp"
#include "collectors/process/tree.hpp"
#include "collectors/process/tree_scanner.hpp"
#include "collectors/python/elf_symbols.hpp"
#include "collectors/python/version.hpp"

namespace stepscope {
namespace {

using python::version_from_file_name;
using python::version_from_hex;
using python::version_from_rodata;

TEST(PythonVersion, FromHex) {
  EXPECT_EQ(version_from_hex(0x030b07f0).text, "3.11.7");
  EXPECT_EQ(version_from_hex(0x030d00c1).text, "3.13.0rc1");
  EXPECT_EQ(version_from_hex(0x030e00a3).text, "3.14.0a3");
  EXPECT_EQ(version_from_hex(0x030b07f0).minor, 11);
}

TEST(PythonVersion, FromFileName) {
  EXPECT_EQ(version_from_file_name("/usr/lib/libpython3.9.so.1.0")->text, "3.9");
  EXPECT_EQ(version_from_file_name("/usr/bin/python3.11")->minor, 11);
  EXPECT_EQ(version_from_file_name("/opt/lib/libpython3.10d.so")->minor, 10);
  EXPECT_FALSE(version_from_file_name("/usr/bin/python3"));
  EXPECT_FALSE(version_from_file_name("/usr/bin/sleep"));
}

TEST(PythonVersion, FromRodata) {
  using namespace std::string_literals;
  std::string rodata = "\0%s\0/tmp/Python-3.9.18\0/usr/lib/3.9.x\0"s;
  EXPECT_EQ(version_from_rodata(rodata, 3, 9)->text, "3.9.18");
  EXPECT_EQ(version_from_rodata("x\0" "3.13.0rc1\0"s, 3, 13)->text, "3.13.0rc1");
  EXPECT_FALSE(version_from_rodata("13.9.1\0"s, 3, 9));
  EXPECT_FALSE(version_from_rodata("3.9.1"s, 3, 9)) << "not NUL-terminated";
}

TEST(MemoryMaps, ParsesPathsWithSpacesAndSpecialMappings) {
  auto maps = parse_memory_maps(
      "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/python 3 (deleted)\n"
      "7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f000000-7f001000 rw-p 00000000 00:00 0 \n"
      "garbage\n");
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].path, "/usr/bin/python 3 (deleted)");
  EXPECT_TRUE(maps[0].executable);
  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[1].path, "[stack]");
  EXPECT_EQ(maps[2].path, "");
}

TEST(ProcessMemory, ReadsAndRefusesUnmappedRanges) {
  ProcessMemory memory(::getpid());
  uint64_t value = 0x1122334455667788, copy = 0;
  ASSERT_TRUE(memory.read_value(reinterpret_cast<uint64_t>(&value), copy));
  EXPECT_EQ(copy, value);
  EXPECT_FALSE(memory.read(0x10, &copy, sizeof copy));
  EXPECT_EQ(errno, EFAULT);
  uint64_t a = 1, b = 2, out[2] = {};
  ProcessMemory::Region regions[] = {{reinterpret_cast<uint64_t>(&a), &out[0], 8},
                                     {reinterpret_cast<uint64_t>(&b), &out[1], 8}};
  ASSERT_TRUE(memory.read_many(regions));
  EXPECT_EQ(out[1], 2u);
  regions[1].addr = 0x10;
  EXPECT_FALSE(memory.read_many(regions));
}

// Patterned pages of this process, and regions of them that read_many copies
// into buffers one byte longer than asked, so an overrun shows.
class RegionsOfPages {
 public:
  static constexpr size_t kPage = 4096;

  explicit RegionsOfPages(size_t pages) : buffer_((pages + 1) * kPage) {
    for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = static_cast<char>(i * 7 + i / 251);
    base_ = (reinterpret_cast<uint64_t>(buffer_.data()) + kPage - 1) & ~uint64_t{kPage - 1};
  }

  void add(uint64_t offset, size_t size) {
    cases_.push_back({offset, size});
    out_.emplace_back(size + 1, '\x55');
  }

  // Built once every region is added: out_ no longer moves.
  std::vector<ProcessMemory::Region> regions() {
    std::vector<ProcessMemory::Region> regions;
    for (size_t i = 0; i < cases_.size(); ++i) regions.push_back({base_ + cases_[i].first, out_[i].data(), cases_[i].second});
    return regions;
  }

  // Every region got exactly its own bytes, and nothing past them.
  void expect_each_copied_exactly() const {
    for (size_t i = 0; i < cases_.size(); ++i) {
      const auto [offset, size] = cases_[i];
      const char* expected = reinterpret_cast<const char*>(base_ + offset);
      EXPECT_EQ(std::string(out_[i].data(), size), std::string(expected, size)) << i;
      EXPECT_EQ(out_[i][size], '\x55') << "region " << i << " overran";
    }
  }

  char* some_destination() { return out_.front().data(); }

 private:
  std::vector<char> buffer_;
  uint64_t base_ = 0;
  std::vector<std::pair<uint64_t, size_t>> cases_;  // (offset, size)
  std::vector<std::vector<char>> out_;
};

// Regions on one page are read as one range (read_many joins them); each
// destination must still get exactly its own bytes, whatever the order.
TEST(ProcessMemory, JoinedRegionsCopyExactlyTheirOwnBytes) {
  constexpr size_t kPage = RegionsOfPages::kPage;
  RegionsOfPages pages(2);
  // Ascending with gaps on one page, adjacent, backwards, on the next page,
  // across the page boundary, and empty.
  for (auto [offset, size] : std::initializer_list<std::pair<uint64_t, size_t>>{
           {8, 8}, {100, 4}, {104, 16}, {2000, 300}, {50, 8}, {4090, 4}, {4100, 8}, {kPage - 4, 12},
           {kPage + 500, 0}, {kPage + 600, 64}}) {
    pages.add(offset, size);
  }
  std::vector<ProcessMemory::Region> regions = pages.regions();
  ProcessMemory memory(::getpid());
  ASSERT_TRUE(memory.read_many(regions));
  pages.expect_each_copied_exactly();
  // A joined range still fails as a whole when one region cannot be read.
  regions.push_back({0x10, pages.some_destination(), 8});
  EXPECT_FALSE(memory.read_many(regions));
}

// Joined ranges go through a scratch buffer of two pages; those that no
// longer fit are read region by region, and a later one that fits again goes
// through the buffer: every region must still get exactly its own bytes.
TEST(ProcessMemory, ManyJoinedRangesOutgrowTheScratchBuffer) {
  constexpr size_t kPage = RegionsOfPages::kPage;
  RegionsOfPages pages(8);
  for (size_t page = 0; page < 5; ++page) {  // five ranges of 3600 bytes: 18 KB
    pages.add(page * kPage, 3000);
    pages.add(page * kPage + 3500, 100);
  }
  pages.add(5 * kPage, 800);  // 900 bytes: fits after the first two
  pages.add(5 * kPage + 850, 50);
  std::vector<ProcessMemory::Region> regions = pages.regions();
  ProcessMemory memory(::getpid());
  const uint64_t calls = memory.system_calls();
  ASSERT_TRUE(memory.read_many(regions));
  EXPECT_EQ(memory.system_calls(), calls + 1);
  pages.expect_each_copied_exactly();
}

TEST(ProcessMemory, ExplainsRefusalWithAFix) {
  std::string text = explain_access_denied(1);
  EXPECT_NE(text.find("process 1"), std::string::npos) << text;
}

// Stripped or static builds may lack the _PyRuntime symbol; 3.11+ put it in
// its own section, which must give the same address. Debian's python3.11 is a
// non-PIE executable with both; a pyenv libpython is position independent.
TEST(ElfImage, FindsPyRuntimeBySymbolAndBySection) {
  struct Case {
    std::string path;
    uint64_t mapped_at;  // where its first segment is mapped
    uint64_t bias;       // what that makes the load bias
  };
  const Case cases[] = {{"/usr/bin/python3.11", 0x400000, 0},
                        {"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 0x7f0000000000,
                         0x7f0000000000}};
  int checked = 0;
  for (const Case& c : cases) {
    if (!std::filesystem::exists(c.path)) continue;
    MemoryMapping mapping;
    mapping.start = c.mapped_at;
    mapping.end = c.mapped_at + 0x1000;
    mapping.path = c.path;
    std::vector<MemoryMapping> mappings{mapping};
    std::string error;
    auto image = ElfImage::open(::getpid(), c.path, mappings, &error);
    ASSERT_TRUE(image) << error;
    EXPECT_EQ(image->load_bias(), c.bias) << c.path;
    auto symbol = image->symbol_address("_PyRuntime");
    auto section = image->section(".PyRuntime");
    ASSERT_TRUE(symbol && section) << c.path;
    EXPECT_EQ(*symbol, section->address) << c.path;
    EXPECT_TRUE(image->symbol_address("Py_Version"));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no CPython 3.11+ binary to read";
}

// The values binutils' readelf gives the defined symbols of the file at
// `path` (symbol tables as readelf prints them: "Num: Value Size Type Bind
// Vis Ndx Name"), the first of each name.
std::map<std::string, uint64_t> readelf_symbol_values(const std::string& path) {
  std::map<std::string, uint64_t> values;
  std::string command = "readelf -sW '" + path + "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return values;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::istringstream fields(line);
    std::string num, hex, size, type, bind, vis, ndx, sym;
    if (fields >> num >> hex >> size >> type >> bind >> vis >> ndx >> sym && ndx != "UND" &&
        hex.find_first_not_of("0123456789abcdef") == std::string::npos) {
      values.try_emplace(sym, std::stoull(hex, nullptr, 16));
    }
  }
  ::pclose(pipe);
  return values;
}

// Several names in one pass give what one lookup per name gives, what
// readelf gives, and nothing for a name that is not there.
TEST(ElfImage, LooksUpSeveralSymbolsInOnePass) {
  const std::string paths[] = {"/usr/bin/python3.11",
                               "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
                               "/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0"};
  constexpr std::string_view kNames[] = {"PyCode_Type", "no_such_symbol_in_python",
                                         "_PyRuntime", "Py_Version", "PyCode_Type"};
  constexpr uint64_t kMappedAt = 0x7f0000000000;
  int checked = 0;
  for (const std::string& path : paths) {
    if (!std::filesystem::exists(path)) continue;
    MemoryMapping mapping;
    mapping.start = kMappedAt;
    mapping.end = kMappedAt + 0x1000;
    mapping.path = path;
    std::string error;
    auto image = ElfImage::open(::getpid(), path, {mapping}, &error);
    ASSERT_TRUE(image) << error;
    auto found = image->symbol_addresses(kNames);
    const std::map<std::string, uint64_t> by_readelf = readelf_symbol_values(path);
    ASSERT_FALSE(by_readelf.empty()) << "readelf listed no symbols of " << path;
    ASSERT_EQ(found.size(), std::size(kNames));
    EXPECT_FALSE(found[1]) << path;
    EXPECT_EQ(found[0], found[4]) << path;
    for (size_t k = 0; k < found.size(); ++k) {
      EXPECT_EQ(found[k], image->symbol_address(kNames[k])) << path << " " << kNames[k];
      std::optional<uint64_t> expected;
      if (auto it = by_readelf.find(std::string(kNames[k])); it != by_readelf.end()) {
        expected = it->second + image->load_bias();
      }
      EXPECT_EQ(found[k], expected) << path << " " << kNames[k];
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no CPython binary to read";
}

TEST(ProcessTree, StartsAtTheRootAndFindsChildren) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::vector<pid_t> tree = process_tree(::getpid());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree[0], ::getpid());
  EXPECT_NE(std::find(tree.begin(), tree.end(), child), tree.end());
  EXPECT_TRUE(process_tree(-5).empty());
}

// Scan after scan through the same descriptors, the scanner agrees with
// process_tree(): a child that appears is found, one that exits is dropped.
TEST(ProcessTree, TheScannerFollowsChildrenComingAndGoing) {
  auto spawn = [] {
    pid_t child = ::fork();
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    return child;
  };
  auto end = [](pid_t child) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  };
  auto holds = [](const std::vector<pid_t>& tree, pid_t pid) {
    return std::find(tree.begin(), tree.end(), pid) != tree.end();
  };
  ProcessTreeScanner scanner;
  pid_t first = spawn();
  std::vector<pid_t> tree = scanner.scan(::getpid());
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree[0], ::getpid());
  EXPECT_TRUE(holds(tree, first));
  EXPECT_EQ(tree, process_tree(::getpid()));
  pid_t second = spawn();
  tree = scanner.scan(::getpid());
  EXPECT_TRUE(holds(tree, first));
  EXPECT_TRUE(holds(tree, second));
  end(first);
  tree = scanner.scan(::getpid());
  EXPECT_FALSE(holds(tree, first));
  EXPECT_TRUE(holds(tree, second));
  EXPECT_EQ(tree, process_tree(::getpid()));
  end(second);
  EXPECT_FALSE(holds(scanner.scan(::getpid()), second));
  EXPECT_TRUE(scanner.scan(-5).empty());
  EXPECT_TRUE(scanner.scan(first).empty()) << "a reaped process has no tree";
}

}  // namespace
}  // namespace stepscope
