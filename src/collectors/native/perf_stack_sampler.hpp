// Copies of one thread's user registers and stack, taken by the kernel while
// the thread runs on a CPU (perf_event_open), so that its native stack can be
// unwound later without ever stopping or ptrace-attaching it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/unique_fd.hpp"

namespace stepscope {

// The x86-64 registers an unwinder starts from, in DWARF numbering: rax rdx
// rcx rbx rsi rdi rbp rsp r8..r15, then the return address column (rip).
inline constexpr size_t kUnwindRegisterCount = 17;
inline constexpr size_t kDwarfRsp = 7;
inline constexpr size_t kDwarfRip = 16;

struct UserStackSample {
  int64_t time_ns = 0;  // CLOCK_MONOTONIC, the clock of the Run
  int64_t tid = 0;
  std::array<uint64_t, kUnwindRegisterCount> regs{};
  std::vector<char> stack;  // the bytes from the stack pointer up, as the kernel copied them
};

class PerfStackSampler {
 public:
  // A task-clock event on thread `tid` that copies its registers and the
  // `stack_bytes` above its stack pointer after every `period_ns` of the
  // thread's CPU time. Null, with `error` saying why (the kernel's refusal
  // explained by explain_perf_refusal), when the kernel refuses.
  static std::unique_ptr<PerfStackSampler> open(pid_t tid, int64_t period_ns, uint32_t stack_bytes,
                                                std::string& error);
  ~PerfStackSampler();
  PerfStackSampler(const PerfStackSampler&) = delete;
  PerfStackSampler& operator=(const PerfStackSampler&) = delete;

  // The newest copy the kernel took since the last call, in `out` (its
  // storage reused); false when it took none. Older ones are overwritten.
  bool take_newest(UserStackSample& out);

  // Copies handed out by take_newest.
  uint64_t samples_taken() const { return taken_; }

 private:
  PerfStackSampler(UniqueFd fd, void* ring, size_t ring_bytes, pid_t tid);
  // Copies `n` bytes at ring position `position` (a running byte count, as
  // data_head and data_tail are) into `out`, across the buffer's end.
  void copy_from_ring(uint64_t position, void* out, size_t n) const;
  // A record's bytes in one piece: in place, or copied into scratch_ when it
  // wraps around the buffer's end.
  const char* record_bytes(uint64_t position, size_t size);
  UniqueFd fd_;
  void* ring_;
  size_t ring_bytes_;
  pid_t tid_;
  const char* data_ = nullptr;  // the data pages, after the metadata page
  size_t data_bytes_ = 0;       // a power of two
  std::vector<char> scratch_;   // one record of the largest size (64 KiB)
  uint64_t taken_ = 0;
  uint64_t last_head_ = 0;  // the kernel's write position at the last call
};

// Why perf_event_open failed with `error_number` for another process's
// thread, and which setting allows it (kernel.perf_event_paranoid,
// CAP_PERFMON, a container's seccomp profile).
std::string explain_perf_refusal(int error_number);

}  // namespace stepscope
