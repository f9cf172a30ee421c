// The line-table decoder agrees with the interpreter itself: each installed
// pyenv CPython compiles the sources of 30 standard-library modules, walks
// every code object (nested ones included) and prints, for every instruction
// offset, the line that its own PyCode_Addr2Line reports (called through
// ctypes). The decoder must give the same line for all of them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <string>
#include <vector>

#include "collectors/python/line_table.hpp"

namespace stepscope::python {
namespace {

constexpr const char* kDumpScript = R"PY(
import ctypes, importlib.util, sys

MODULES = ["argparse", "ast", "asyncio.base_events", "collections", "configparser", "csv",
           "dataclasses", "_pydecimal", "difflib", "email.message", "enum", "fractions",
           "functools", "http.client", "inspect", "json.decoder", "logging", "pathlib",
           "pickle", "pydoc", "random", "shutil", "statistics", "string", "subprocess",
           "tarfile", "textwrap", "threading", "typing", "zipfile"]

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int

def walk(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from walk(const)

out = sys.stdout
for name in MODULES:
    origin = importlib.util.find_spec(name).origin
    with open(origin, "rb") as f:
        module = compile(f.read(), origin, "exec")
    for code in walk(module):
        table = code.co_linetable if sys.version_info >= (3, 10) else code.co_lnotab
        lines = [addr2line(code, offset) for offset in range(0, len(code.co_code), 2)]
        out.write("%d %s %s %s\n" % (code.co_firstlineno, table.hex() or "-",
                                     addr2line(code, -1), ",".join(map(str, lines))))
)PY";

struct Sample {
  int first_line = 0;
  std::string table;
  int line_before_start = 0;  // PyCode_Addr2Line(code, -1)
  std::vector<int> lines;     // for offsets 0, 2, 4, ...
};

std::string from_hex(const std::string& hex) {
  std::string bytes;
  if (hex == "-") return bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

Sample parse_sample(const std::string& line) {
  std::istringstream in(line);
  Sample sample;
  std::string hex, lines;
  in >> sample.first_line >> hex >> sample.line_before_start >> lines;
  sample.table = from_hex(hex);
  std::istringstream list(lines);
  for (std::string item; std::getline(list, item, ',');) sample.lines.push_back(std::stoi(item));
  return sample;
}

// Runs `python` on the dump script; the samples it prints.
std::vector<Sample> dump_with(const std::string& python) {
  auto script = std::filesystem::temp_directory_path() /
                ("stepscope_line_table_" + std::to_string(::getpid()) + ".py");
  std::ofstream(script) << kDumpScript;
  std::string command = python + " " + script.string();
  FILE* pipe = ::popen(command.c_str(), "r");
  std::vector<Sample> samples;
  std::string line;
  for (int c; (c = std::fgetc(pipe)) != EOF;) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    samples.push_back(parse_sample(line));
    line.clear();
  }
  int status = ::pclose(pipe);
  std::filesystem::remove(script);
  EXPECT_EQ(status, 0) << command;
  return samples;
}

std::string pyenv_root() {
  const char* root = std::getenv("PYENV_ROOT");
  if (root != nullptr) return root;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/root") + "/.pyenv";
}

class LineTableAgainstInterpreter : public testing::TestWithParam<int> {};

TEST_P(LineTableAgainstInterpreter, MatchesPyCodeAddr2LineOnStdlibCode) {
  const int minor = GetParam();
  std::string python;
  for (const auto& entry : std::filesystem::directory_iterator(pyenv_root() + "/versions")) {
    std::string name = entry.path().filename().string();
    if (name.rfind("3." + std::to_string(minor) + ".", 0) == 0) {
      python = entry.path().string() + "/bin/python3";
    }
  }
  if (python.empty()) GTEST_SKIP() << "CPython 3." << minor << " is not installed by pyenv";

  LineTableFormat format = minor <= 9    ? LineTableFormat::kLnotab
                           : minor == 10 ? LineTableFormat::kLinetable310
                                         : LineTableFormat::kLocations311;
  std::vector<Sample> samples = dump_with(python);
  ASSERT_GT(samples.size(), 3000u) << "too few code objects from " << python;
  size_t offsets = 0, mismatches = 0;
  for (const Sample& sample : samples) {
    LineTable table(format, sample.table, sample.first_line);
    EXPECT_EQ(table.line_at(-1), sample.line_before_start);
    for (size_t i = 0; i < sample.lines.size(); ++i, ++offsets) {
      int offset = static_cast<int>(2 * i);
      if (table.line_at(offset) == sample.lines[i]) continue;
      if (++mismatches <= 5) {
        ADD_FAILURE() << python << ": first line " << sample.first_line << ", offset " << offset
                      << ": decoded " << table.line_at(offset) << ", interpreter says "
                      << sample.lines[i];
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << offsets << " offsets";
  RecordProperty("offsets_checked", std::to_string(offsets));
}

INSTANTIATE_TEST_SUITE_P(CPython, LineTableAgainstInterpreter, testing::Values(8, 9, 10, 11, 12, 13),
                         [](const testing::TestParamInfo<int>& param) {
                           return "3_" + std::to_string(param.param);
                         });

TEST(LineTable, SurvivesHostileBytes) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 7919) & 0xff));
  for (auto format : {LineTableFormat::kLnotab, LineTableFormat::kLinetable310,
                      LineTableFormat::kLocations311}) {
    LineTable table(format, junk, 2147483000);
    for (int offset = -2; offset < 20000; offset += 3) table.line_at(offset);
    LineTable empty(format, {}, 5);
    EXPECT_EQ(empty.line_at(-1), 5);
  }
}

}  // namespace
}  // namespace stepscope::python
