// What the native collectors' tests share: small C programs compiled at test
// time (without frame pointers, so that only CFI unwinds them), the children
// that run them, and waiting for a sample while checking that the child is
// never stopped or traced.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/native/perf_stack_sampler.hpp"

namespace stepscope::test {

// outer -> middle -> inner, inner spinning until killed.
extern const char* const kSpinProgram;
// Waits for a byte on stdin, then dlopens argv[1] and calls its lib_outer,
// which calls lib_inner, which spins (kSpinLibrary).
extern const char* const kDlopenProgram;
extern const char* const kSpinLibrary;
// Maps a data file (argv[1]), waits for release(), maps the library argv[2]
// whole in its place and runs the function at file offset argv[3] (hex).
extern const char* const kRemapProgram;

// A temporary folder of programs compiled with `cc -O2 -fomit-frame-pointer`,
// removed with it.
class CompiledPrograms {
 public:
  CompiledPrograms();
  ~CompiledPrograms();
  CompiledPrograms(const CompiledPrograms&) = delete;
  CompiledPrograms& operator=(const CompiledPrograms&) = delete;

  // Compiles `source` into the folder as `name` with `flags` added; an empty
  // path, with `why`, when cc is missing or fails.
  std::filesystem::path compile(const std::string& name, std::string_view source, const std::string& flags,
                                std::string& why) const;

 private:
  std::filesystem::path dir_;
};

// A child running `program` with `args`, its stdin a pipe (release() writes
// to it); killed and reaped when destroyed.
class ChildProgram {
 public:
  ChildProgram(const std::filesystem::path& program, const std::vector<std::string>& args = {});
  ~ChildProgram();
  ChildProgram(const ChildProgram&) = delete;
  ChildProgram& operator=(const ChildProgram&) = delete;

  pid_t pid() const { return pid_; }
  // Waits (up to 5 s) until the child runs `program`: its exec done and
  // libc mapped.
  bool wait_until_exec(const std::filesystem::path& program) const;
  // Waits (up to 5 s) until the child maps `file`.
  bool wait_until_mapped(const std::filesystem::path& file) const;
  void release();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
};

// Whether the kernel loads programs at random addresses (ASLR): two
// processes of one program then map it apart.
bool address_space_randomized();

// Whether /proc/PID/status says the process is neither stopped nor traced.
bool runs_untraced(pid_t pid, std::string& status_line);

// Takes samples for up to `timeout` until one satisfies `accept`, checking
// after each round that the child runs untraced (a failed expectation
// otherwise). False at the timeout.
bool sample_until(PerfStackSampler& sampler, pid_t child, std::chrono::milliseconds timeout,
                  const std::function<bool(const UserStackSample&)>& accept, UserStackSample& sample);

}  // namespace stepscope::test
