#include "collectors/round_timer.hpp"

#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace stepscope {

namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint32_t kWatchedTag = 2;  // the slots' tags are their indexes, 0 and 1

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void add_to_epoll(int epoll_fd, int fd, uint32_t tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u32 = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) fail("round timer: epoll_ctl");
}

}  // namespace

RoundTimer::RoundTimer(int watched_fd)
    : epoll_(epoll_create1(EPOLL_CLOEXEC)) {
  if (!epoll_.valid()) fail("round timer: epoll_create1");
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    slots_[i].fd.reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!slots_[i].fd.valid()) fail("round timer: timerfd_create");
    add_to_epoll(epoll_.get(), slots_[i].fd.get(), i);
  }
  if (watched_fd >= 0) add_to_epoll(epoll_.get(), watched_fd, kWatchedTag);
}

int RoundTimer::slot_set_for(int64_t deadline_ns) const {
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    if (slots_[i].deadline_ns == deadline_ns) return i;
  }
  return -1;
}

// Sets slot `slot` to fire at `deadline_ns`, or disarms it (0). Either clears
// an expiry it had not had read, so epoll stops reporting it.
void RoundTimer::set(int slot, int64_t deadline_ns) {
  itimerspec when{};
  when.it_value = {static_cast<time_t>(deadline_ns / kSecond), static_cast<long>(deadline_ns % kSecond)};
  if (timerfd_settime(slots_[slot].fd.get(), TFD_TIMER_ABSTIME, &when, nullptr) != 0) {
    fail("round timer: timerfd_settime");
  }
  slots_[slot].deadline_ns = deadline_ns;
  if (deadline_ns != 0) ++timers_set_;
}

RoundTimer::Woken RoundTimer::wait_until(int64_t deadline_ns, int64_t following_ns) {
  deadline_ns = std::max<int64_t>(deadline_ns, 1);  // 0 would disarm: 1 ns has passed
  const bool announced = following_ns > deadline_ns;
  int due = slot_set_for(deadline_ns);
  const int next = announced ? slot_set_for(following_ns) : -1;
  if (due < 0) {
    due = next == 0 ? 1 : 0;
    set(due, deadline_ns);
  }
  if (announced && next < 0) set(1 - due, following_ns);

  for (;;) {
    epoll_event events[3];
    const int n = epoll_wait(epoll_.get(), events, 3, -1);
    if (n < 0) {
      if (errno == EINTR) return Woken::kInterrupted;
      fail("round timer: epoll_wait");
    }
    bool fired = false, watched = false;
    for (int i = 0; i < n; ++i) {
      const uint32_t tag = events[i].data.u32;
      if (tag == kWatchedTag) {
        watched = true;
      } else if (static_cast<int>(tag) == due) {
        fired = true;
        slots_[due].deadline_ns = 0;  // taken; its next set clears the expiry
      } else if (!announced || slots_[tag].deadline_ns != following_ns) {
        set(static_cast<int>(tag), 0);  // a deadline the loop gave up fired
      }  // else the next round's is due already (a late wakeup): the next wait takes it
    }
    // A signal first: the round that follows either wake looks for it.
    if (watched) return Woken::kWatched;
    if (fired) return Woken::kDeadline;
  }
}

}  // namespace stepscope
