// Reading another process's memory without stopping it.
//
// process_vm_readv copies straight from the target's address space: no ptrace
// attach, no signal, no pause, so sampling does not perturb the target. The
// price is that what we read may be torn (the target keeps running while we
// copy), so every reader of this memory treats it as untrusted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

namespace stepscope {

class ProcessMemory {
 public:
  explicit ProcessMemory(pid_t pid) noexcept : pid_(pid) {}

  pid_t pid() const noexcept { return pid_; }

  // Copies `n` bytes at `addr` in the target into `out`. True only when all
  // of them were copied; otherwise errno says why (EFAULT for an unmapped or
  // partly mapped range, EPERM when refused, ESRCH when the process is gone).
  bool read(uint64_t addr, void* out, size_t n) const noexcept;

  template <class T>
  bool read_value(uint64_t addr, T& out) const noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    return read(addr, &out, sizeof out);
  }

  // One region to copy in a batch.
  struct Region {
    uint64_t addr;
    void* out;
    size_t size;
  };

  // Copies several regions in as few system calls as the kernel allows
  // (IOV_MAX regions per call): one call instead of one per region is the
  // main saving of the sampler. True only when every region was copied whole.
  bool read_many(std::span<const Region> regions) const noexcept;

  // How many process_vm_readv calls this object made: what the sampler's
  // tests and benchmarks count per sample.
  uint64_t system_calls() const noexcept { return system_calls_.load(std::memory_order_relaxed); }

 private:
  pid_t pid_;
  mutable std::atomic<uint64_t> system_calls_{0};  // relaxed: a statistic, atomic to be race-free
};

// Why reading `pid`'s memory was refused, and how to allow it: checks Yama's
// ptrace_scope, the target's owner against ours and CAP_SYS_PTRACE in our
// effective capabilities. One or more sentences, each naming a cause and a fix.
std::string explain_access_denied(pid_t pid);

}  // namespace stepscope
