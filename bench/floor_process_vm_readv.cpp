// Floors for the sampler benchmark (bench/sampler_peers.py): what the kernel
// charges for the system calls a Python stack sampler cannot avoid.
//
//   g++ -O2 -std=c++20 -o floor bench/floor_process_vm_readv.cpp && ./floor [BYTES...]
//
// A child process holds a heap buffer and sleeps; we time, in a loop:
//   * one process_vm_readv of BYTES from the child's heap (default: 8 bytes, the
//     bare system call, and 4704 bytes, what stepscope reads per sample of a
//     30-frame stack on CPython 3.11: a 4 KiB data-stack chunk, the 304-byte
//     thread state, two code-object headers and a few pointers);
//   * reading /proc/CHILD/task/CHILD/stat by open+read+close, and by pread on a
//     descriptor kept open (how a sampler learns whether a thread is running),
//     and pread of the much shorter schedstat; then, for a thread spinning on a
//     CPU, pread of its stat and of its `syscall` file (which says "running");
//   * the CPU one clock_nanosleep wakeup costs, after 1 ms (a 1 kHz timer loop)
//     and after 10 ms (100 Hz); and one 1 ms wakeup of a timer set a round
//     ahead, as stepscope's RoundTimer sleeps;
//   * a sample's read as the sampler makes it on 3.11: one process_vm_readv of
//     six ranges on six pages (340, 24, 304, 8, 4096 and 548 bytes) from a
//     child that keeps writing those pages, as a running interpreter writes
//     its frames; in a warm loop, and after each 1 ms sleep (the sleep's own
//     CPU subtracted): what the cold caches after a wakeup add.
// Prints one JSON object: microseconds per call, the median of several batches.
#include <fcntl.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

double now_us(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Median over `batches` of the mean time of `calls` calls to `body`.
double median_us_per_call(const std::function<void()>& body, int calls, int batches = 7,
                          clockid_t clock = CLOCK_MONOTONIC) {
  std::vector<double> means;
  for (int b = 0; b < batches; ++b) {
    double start = now_us(clock);
    for (int i = 0; i < calls; ++i) body();
    means.push_back((now_us(clock) - start) / calls);
  }
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

// The six ranges of a 3.11 sample of a 30-frame stack, each on its own page
// of the child's buffer, with the child writing all six pages meanwhile.
std::string six_range_reads(double sleep_1ms_cpu_us) {
  constexpr size_t kPage = 4096;
  const size_t lengths[6] = {340, 24, 304, 8, 4096, 548};
  std::vector<char> pages(8 * kPage, 'x');
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(pages.data()) + kPage - 1) & ~(kPage - 1));
  pid_t writer = fork();
  if (writer == 0) {
    for (volatile char* p = base;; p = p + kPage < base + 6 * kPage ? p + kPage : base) *p = static_cast<char>(*p + 1);
  }
  std::vector<char> local(6 * kPage);
  iovec mine[6], theirs[6];
  size_t total = 0;
  for (size_t i = 0; i < 6; ++i) {
    const size_t offset = i == 4 ? 0 : 128;  // the chunk starts a page; the others do not
    theirs[i] = {base + i * kPage + offset, lengths[i]};
    mine[i] = {local.data() + i * kPage, lengths[i]};
    total += lengths[i];
  }
  auto read_six = [&] {
    if (process_vm_readv(writer, mine, 6, theirs, 6, 0) != static_cast<ssize_t>(total)) {
      std::perror("process_vm_readv");
      std::exit(1);
    }
  };
  usleep(20'000);  // the writer on its CPU
  const double warm = median_us_per_call(read_six, 5000, 7, CLOCK_PROCESS_CPUTIME_ID);
  const double after_sleep = median_us_per_call(
      [&] {
        timespec sleep{0, 1'000'000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &sleep, nullptr);
        read_six();
      },
      200, 5, CLOCK_PROCESS_CPUTIME_ID);
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  return "\"six_range_read_warm_us\": " + std::to_string(warm) +
         ", \"six_range_read_after_1ms_sleep_us\": " + std::to_string(after_sleep - sleep_1ms_cpu_us);
}

// CPU of one 1 ms wakeup as stepscope's RoundTimer sleeps: two one-shot
// timerfds take turns, each set a round before it is due, so setting it never
// makes it the CPU's next timer event (no reprogramming of the hardware timer
// in the sleeper's time).
double timer_set_ahead_wakeup_cpu_us() {
  constexpr int64_t kPeriod = 1'000'000;
  int fds[2] = {timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC), timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)};
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t deadline[2] = {now.tv_sec * 1'000'000'000LL + now.tv_nsec + kPeriod, 0};
  deadline[1] = deadline[0] + kPeriod;
  auto set = [&](int i) {
    itimerspec when{};
    when.it_value = {static_cast<time_t>(deadline[i] / 1'000'000'000), static_cast<long>(deadline[i] % 1'000'000'000)};
    timerfd_settime(fds[i], TFD_TIMER_ABSTIME, &when, nullptr);
  };
  set(0);
  set(1);
  int turn = 0;
  const double us = median_us_per_call(
      [&] {
        uint64_t expirations;
        if (read(fds[turn], &expirations, sizeof expirations) != sizeof expirations) std::exit(1);
        deadline[turn] += 2 * kPeriod;
        set(turn);
        turn = 1 - turn;
      },
      200, 5, CLOCK_PROCESS_CPUTIME_ID);
  close(fds[0]);
  close(fds[1]);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {8, 4704};
  const size_t biggest = *std::max_element(sizes.begin(), sizes.end());

  // The child's buffer is allocated before fork, so its address is the same there.
  std::vector<char> heap(biggest, 'x');
  int ready[2];
  if (pipe(ready) != 0) return 1;
  pid_t child = fork();
  if (child == 0) {
    std::memset(heap.data(), 'y', heap.size());  // its own copy of the pages
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    for (;;) pause();
  }
  char byte;
  if (read(ready[0], &byte, 1) != 1) return 1;

  std::vector<char> local(biggest);
  std::string out = "{";
  for (size_t size : sizes) {
    iovec mine{local.data(), size};
    iovec theirs{heap.data(), size};
    double us = median_us_per_call(
        [&] {
          if (process_vm_readv(child, &mine, 1, &theirs, 1, 0) != static_cast<ssize_t>(size)) {
            std::perror("process_vm_readv");
            std::exit(1);
          }
        },
        20000);
    out += "\"process_vm_readv_" + std::to_string(size) + "B_us\": " + std::to_string(us) + ", ";
  }

  const std::string stat = "/proc/" + std::to_string(child) + "/task/" + std::to_string(child) + "/stat";
  char text[1024];
  double open_read_close = median_us_per_call(
      [&] {
        int fd = open(stat.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, text, sizeof text) <= 0) std::exit(1);
        close(fd);
      },
      5000);
  int fd = open(stat.c_str(), O_RDONLY | O_CLOEXEC);
  double pread_only = median_us_per_call(
      [&] {
        if (pread(fd, text, sizeof text, 0) <= 0) std::exit(1);
      },
      5000);
  close(fd);
  // schedstat: three numbers (on-CPU ns, waiting ns, slices), no 52-field stat line.
  const std::string schedstat =
      "/proc/" + std::to_string(child) + "/task/" + std::to_string(child) + "/schedstat";
  fd = open(schedstat.c_str(), O_RDONLY | O_CLOEXEC);
  double schedstat_pread = median_us_per_call(
      [&] {
        if (pread(fd, text, sizeof text, 0) <= 0) std::exit(1);
      },
      5000);
  close(fd);
  // A thread on a CPU: its stat, and its `syscall` file, which says "running"
  // (what the sampler reads for a thread it last saw running).
  pid_t spinner = fork();
  if (spinner == 0) {
    for (;;) {
    }
  }
  auto pread_us = [&](const char* file) {
    const std::string path = "/proc/" + std::to_string(spinner) + "/task/" + std::to_string(spinner) + "/" + file;
    int kept = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    double us = median_us_per_call(
        [&] {
          if (pread(kept, text, sizeof text, 0) <= 0) std::exit(1);
        },
        5000);
    close(kept);
    return us;
  };
  const double running_stat = pread_us("stat");
  const double running_syscall = pread_us("syscall");
  kill(spinner, SIGKILL);
  waitpid(spinner, nullptr, 0);
  out += "\"proc_stat_pread_running_us\": " + std::to_string(running_stat) + ", ";
  out += "\"proc_syscall_pread_running_us\": " + std::to_string(running_syscall) + ", ";
  out += "\"proc_stat_open_read_close_us\": " + std::to_string(open_read_close) + ", ";
  out += "\"proc_stat_pread_us\": " + std::to_string(pread_only) + ", ";
  out += "\"proc_schedstat_pread_us\": " + std::to_string(schedstat_pread) + ", ";

  // CPU time (not wall time) of one sleep and wakeup: what a timer loop costs at
  // 1 kHz (1 ms sleeps) and at 100 Hz (10 ms sleeps, the CPU idles longer).
  double sleep_1ms_cpu_us = 0;
  for (long ms : {1L, 10L}) {
    double wakeup = median_us_per_call(
        [ms] {
          timespec sleep{0, ms * 1'000'000};
          clock_nanosleep(CLOCK_MONOTONIC, 0, &sleep, nullptr);
        },
        ms == 1 ? 200 : 40, 5, CLOCK_PROCESS_CPUTIME_ID);
    if (ms == 1) sleep_1ms_cpu_us = wakeup;
    out += "\"sleep_" + std::to_string(ms) + "ms_wakeup_cpu_us\": " + std::to_string(wakeup) +
           (ms == 1 ? ", " : "}");
  }

  out.back() = ',';
  out += " \"timer_set_ahead_1ms_wakeup_cpu_us\": " + std::to_string(timer_set_ahead_wakeup_cpu_us()) + ",";
  out += " " + six_range_reads(sleep_1ms_cpu_us) + "}";

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  std::puts(out.c_str());
  return 0;
}
