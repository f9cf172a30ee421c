// Wakes the sampling loop at each round's deadline, or as soon as a watched
// descriptor (the stop signals' signalfd) becomes readable.
//
// Each round's timer is set one round early. Setting a timer that is not the
// CPU's next event leaves the hardware timer as it is; setting the next event
// reprograms it, and in a virtual machine that write is an exit to the
// hypervisor, which the kernel charges to the sleeper: on the nested VMs of
// bench/README.md ("The round timer") 7-10 µs per wakeup, a third of what a
// 1 kHz sampler spent. A sleep with a timeout (sigtimedwait, clock_nanosleep)
// always sets the next event. Here two one-shot timerfds take turns: while the
// loop sleeps for one deadline, the other is already set for the one after,
// and the kernel reprograms the hardware for it in the interrupt that wakes us.
#pragma once

#include <array>
#include <cstdint>

#include "util/unique_fd.hpp"

namespace stepscope {

class RoundTimer {
 public:
  // `watched_fd`: a descriptor whose readability ends a wait early (-1: none).
  // It stays the caller's. Throws std::system_error when the kernel refuses
  // a timer or the epoll instance.
  explicit RoundTimer(int watched_fd = -1);

  enum class Woken { kDeadline, kWatched, kInterrupted };

  // Sleeps until `deadline_ns` on CLOCK_MONOTONIC (at once if it has passed),
  // until the watched descriptor is readable, or until a signal handler runs.
  // `following_ns` is the deadline the loop expects to wait for next (0 or
  // not later than `deadline_ns`: none); its timer is set now, so that the
  // next wait finds it set.
  Woken wait_until(int64_t deadline_ns, int64_t following_ns);

  // How many times a timer was set: once per round while the loop keeps to
  // the deadlines it announced.
  int64_t timers_set() const { return timers_set_; }

 private:
  struct Slot {
    UniqueFd fd;
    int64_t deadline_ns = 0;  // 0: not set, or fired and taken
  };

  int slot_set_for(int64_t deadline_ns) const;
  void set(int slot, int64_t deadline_ns);

  std::array<Slot, 2> slots_;
  UniqueFd epoll_;
  int64_t timers_set_ = 0;
};

}  // namespace stepscope
