// A real Python child for the micro-benchmarks that sample one: the
// interpreter of STEPSCOPE_BENCH_PYTHON (default /usr/bin/python3) spinning
// 30 Python frames deep (level(28) .. level(0) and <module>), killed when
// the benchmark is done.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace stepscope::bench {

inline constexpr const char* kDeepPythonTarget = R"PY(
def level(n):
    if n == 0:
        x = 0
        while True:
            x += 1
    level(n - 1)
level(28)
)PY";

class PythonChild {
 public:
  PythonChild() {
    const char* python = std::getenv("STEPSCOPE_BENCH_PYTHON");
    std::string interpreter = python != nullptr ? python : "/usr/bin/python3";
    std::vector<char*> argv{interpreter.data(), const_cast<char*>("-c"), const_cast<char*>(kDeepPythonTarget),
                            nullptr};
    if (posix_spawn(&pid_, interpreter.c_str(), nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~PythonChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  PythonChild(const PythonChild&) = delete;
  PythonChild& operator=(const PythonChild&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

}  // namespace stepscope::bench
