#include "util/signal_free_thread.hpp"

#include <pthread.h>
#include <signal.h>

#include <utility>

namespace stepscope {

std::thread start_signal_free_thread(std::function<void()> body) {
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // inherited by the new thread
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};
  return std::thread(std::move(body));
}

}  // namespace stepscope
