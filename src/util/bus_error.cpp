#include "util/bus_error.hpp"

#include <signal.h>
#include <unistd.h>

namespace stepscope {
namespace {

constexpr char kMessage[] =
    "stepscope: error: a file shrank while stepscope read it (bus error): was a trace or a "
    "program's library rewritten in place? Run again once it is complete.\n";

// Only async-signal-safe calls: write(2) and _exit(2). The state of the
// interrupted import is unknown, so nothing else runs.
void on_bus_error(int) {
  ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  (void)ignored;
  ::_exit(2);
}

}  // namespace

void exit_cleanly_on_bus_error() noexcept {
  struct sigaction action {};
  action.sa_handler = on_bus_error;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

}  // namespace stepscope
