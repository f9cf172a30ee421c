#include "collectors/native/native_test_programs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <system_error>
#include <thread>

namespace stepscope::test {

const char* const kSpinProgram = R"C(
volatile unsigned long sink;
volatile int stop;
__attribute__((noinline, noclone)) void inner(void) { while (!stop) sink++; }
__attribute__((noinline, noclone)) void middle(void) { inner(); sink += 2; }
__attribute__((noinline, noclone)) void outer(void) { middle(); sink += 3; }
int main(void) { outer(); return (int)sink; }
)C";

const char* const kDlopenProgram = R"C(
#include <dlfcn.h>
#include <unistd.h>
int main(int argc, char** argv) {
  char byte;
  if (argc < 2 || read(0, &byte, 1) != 1) return 2;
  void* library = dlopen(argv[1], RTLD_NOW);
  if (!library) return 3;
  void (*lib_outer)(void) = (void (*)(void))dlsym(library, "lib_outer");
  if (!lib_outer) return 4;
  lib_outer();
  return 0;
}
)C";

const char* const kSpinLibrary = R"C(
volatile unsigned long lib_sink;
volatile int lib_stop;
__attribute__((noinline, noclone)) void lib_inner(void) { while (!lib_stop) lib_sink++; }
__attribute__((noinline, noclone)) void lib_outer(void) { lib_inner(); lib_sink += 2; }
// Touches no data: it runs from a copy of the file mapped whole.
void lib_forever(void) { for (;;) __asm__ volatile(""); }
)C";

const char* const kRemapProgram = R"C(
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char** argv) {
  char byte;
  if (argc < 4) return 2;
  int data = open(argv[1], O_RDONLY), library = open(argv[2], O_RDONLY);
  if (data < 0 || library < 0) return 3;
  size_t size = (size_t)lseek(library, 0, SEEK_END);
  char* at = mmap(0, size, PROT_READ, MAP_PRIVATE, data, 0);
  if (at == MAP_FAILED || read(0, &byte, 1) != 1) return 4;
  if (mmap(at, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, library, 0) == MAP_FAILED) return 5;
  ((void (*)(void))(at + strtoul(argv[3], 0, 16)))();
  return 0;
}
)C";

CompiledPrograms::CompiledPrograms() {
  std::string pattern = (std::filesystem::temp_directory_path() / "stepscope-native-XXXXXX").string();
  if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
}

CompiledPrograms::~CompiledPrograms() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::filesystem::path CompiledPrograms::compile(const std::string& name, std::string_view source,
                                                const std::string& flags, std::string& why) const {
  if (dir_.empty()) {
    why = "no temporary folder";
    return {};
  }
  if (std::system("cc --version >/dev/null 2>&1") != 0) {
    why = "no C compiler (cc) to build the target programs";
    return {};
  }
  std::filesystem::path source_path = dir_ / (name + ".c");
  std::filesystem::path output = dir_ / name;
  std::ofstream(source_path) << source;
  std::filesystem::path log = dir_ / (name + ".log");
  std::string command = "cc -O2 -fomit-frame-pointer " + flags + " -o '" + output.string() + "' '" +
                        source_path.string() + "' >'" + log.string() + "' 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream in(log);
    why = "cc failed: " + std::string(std::istreambuf_iterator<char>(in), {});
    return {};
  }
  return output;
}

ChildProgram::ChildProgram(const std::filesystem::path& program, const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  std::vector<std::string> arguments{program.string()};
  arguments.insert(arguments.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(fds[0], 0);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[0]);
  stdin_fd_ = fds[1];
}

ChildProgram::~ChildProgram() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

// The exe link changes early in the exec, before the kernel has mapped the
// program and long before the dynamic loader maps libc: a look at the maps
// then fails (libdwfl: "Exec format error"). So also wait for libc.
namespace {

bool maps_a_file_named(pid_t pid, std::string_view part) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

bool within_5s(const std::function<bool()>& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

bool ChildProgram::wait_until_exec(const std::filesystem::path& program) const {
  return within_5s([&] {
    std::error_code error;
    return std::filesystem::read_symlink("/proc/" + std::to_string(pid_) + "/exe", error) == program &&
           maps_a_file_named(pid_, "/libc.so");
  });
}

bool ChildProgram::wait_until_mapped(const std::filesystem::path& file) const {
  return within_5s([&] { return maps_a_file_named(pid_, file.string()); });
}

void ChildProgram::release() {
  char byte = 1;
  EXPECT_EQ(::write(stdin_fd_, &byte, 1), 1);
}

bool address_space_randomized() {
  std::ifstream setting("/proc/sys/kernel/randomize_va_space");
  int level = 0;
  return setting >> level && level > 0;
}

bool runs_untraced(pid_t pid, std::string& status_line) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  bool untraced = true;
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("State:\t")) {
      status_line += line + " ";
      untraced = untraced && line.find_first_of("tT", 7) != 7;
    } else if (line.starts_with("TracerPid:")) {
      status_line += line;
      untraced = untraced && line == "TracerPid:\t0";
    }
  }
  return untraced;
}

bool sample_until(PerfStackSampler& sampler, pid_t child, std::chrono::milliseconds timeout,
                  const std::function<bool(const UserStackSample&)>& accept, UserStackSample& sample) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string status;
    EXPECT_TRUE(runs_untraced(child, status)) << status;
    if (sampler.take_newest(sample) && accept(sample)) return true;
  }
  return false;
}

}  // namespace stepscope::test
