// The last-resort scan for _PyRuntime (stripped builds without symbol or
// section) finds the address the symbol gives, on real interpreters.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "collectors/python/elf_symbols.hpp"
#include "collectors/python/offsets_generated.hpp"
#include "collectors/python/runtime_scan.hpp"

extern char** environ;

namespace stepscope::python {
namespace {

std::string pyenv_python(int minor) {
  const char* root = std::getenv("PYENV_ROOT");
  std::filesystem::path versions = std::string(root != nullptr ? root : "/root/.pyenv") + "/versions";
  std::string found;
  if (!std::filesystem::is_directory(versions)) return found;
  for (const auto& entry : std::filesystem::directory_iterator(versions)) {
    if (entry.path().filename().string().rfind("3." + std::to_string(minor) + ".", 0) == 0) {
      found = entry.path().string() + "/bin/python3";
    }
  }
  return found;
}

class RuntimeScan : public testing::TestWithParam<int> {};

TEST_P(RuntimeScan, AgreesWithTheSymbol) {
  const int minor = GetParam();
  std::string python = pyenv_python(minor);
  if (python.empty()) GTEST_SKIP() << "CPython 3." << minor << " is not installed by pyenv";
  std::vector<char*> argv{python.data(), const_cast<char*>("-c"),
                          const_cast<char*>("import time; time.sleep(30)"), nullptr};
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // until initialized

  auto mappings = read_memory_maps(pid).value_or(std::vector<MemoryMapping>{});
  std::string library;
  for (const MemoryMapping& mapping : mappings) {
    if (mapping.path.find("libpython3." + std::to_string(minor)) != std::string::npos) {
      library = mapping.path;
    }
  }
  std::string error;
  auto image = ElfImage::open(pid, library, mappings, &error);
  ProcessMemory memory(pid);
  std::optional<uint64_t> scanned;
  if (image && minor >= 13) scanned = scan_for_debug_cookie(memory, mappings, library);
  for (const PythonLayout* layout : kGeneratedLayouts) {
    if (image && layout->minor == minor) scanned = scan_for_runtime(memory, *layout, mappings, library);
  }
  std::optional<uint64_t> symbol = image ? image->symbol_address("_PyRuntime") : std::nullopt;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(image) << error;
  ASSERT_TRUE(symbol && scanned) << python;
  EXPECT_EQ(*scanned, *symbol) << python;
}

INSTANTIATE_TEST_SUITE_P(CPython, RuntimeScan, testing::Values(8, 9, 10, 11, 12, 13),
                         [](const testing::TestParamInfo<int>& param) {
                           return "3_" + std::to_string(param.param);
                         });

}  // namespace
}  // namespace stepscope::python
