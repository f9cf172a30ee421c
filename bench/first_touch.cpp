// What the first touch of fresh memory costs on this machine, on 4 KiB pages
// and on transparent huge pages (bench/README.md, "Huge pages cost 4x here").
//
//   g++ -O2 -std=c++20 -o first_touch bench/first_touch.cpp && ./first_touch [MB] [ROUNDS]
//
// Each measurement is a fresh child process that maps MB of anonymous memory,
// advises MADV_NOHUGEPAGE or MADV_HUGEPAGE, and writes one byte per 4 KiB
// page. The two kinds alternate, 4 s apart: on a VM whose balloon reports
// free memory to the host, a block freed a moment ago is still backed there,
// and would make the second measurement look cheap. Where transparent huge
// pages are "never" (/sys/kernel/mm/transparent_hugepage/enabled) the advice
// does nothing, and both kinds measure small pages.
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace {

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Milliseconds per MB of the first touch, or a negative number on failure.
double touch_ms_per_mb(size_t mb, bool huge) {
  const size_t bytes = mb << 20;
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return -1;
  madvise(memory, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  auto* bytes_of = static_cast<volatile char*>(memory);
  const double start = now_s();
  for (size_t offset = 0; offset < bytes; offset += 4096) bytes_of[offset] = 1;
  return (now_s() - start) * 1e3 / static_cast<double>(mb);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  for (int round = 0; round < rounds; ++round) {
    for (bool huge : {false, true}) {
      if (round > 0 || huge) sleep(4);
      pid_t child = fork();
      if (child == 0) {
        double ms = touch_ms_per_mb(mb, huge);
        std::printf("%s pages, %zu MB: %.2f ms per MB\n", huge ? "huge" : "4 KiB", mb, ms);
        std::fflush(stdout);
        _exit(ms < 0 ? 1 : 0);
      }
      waitpid(child, nullptr, 0);
    }
  }
  return 0;
}
