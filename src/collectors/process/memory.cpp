#include "collectors/process/memory.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "collectors/process/proc_files.hpp"

namespace stepscope {

bool ProcessMemory::read(uint64_t addr, void* out, size_t n) const noexcept {
  if (n == 0) return true;
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  system_calls_.fetch_add(1, std::memory_order_relaxed);
  ssize_t got = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (got == static_cast<ssize_t>(n)) return true;
  if (got >= 0) errno = EFAULT;  // a partial copy: the range ends in unmapped memory
  return false;
}

namespace {

constexpr uint64_t kPageSize = 4096;

uint64_t page_end(uint64_t end) { return (end + kPageSize - 1) & ~(kPageSize - 1); }

// Whether remote range r holds several regions (zero-sized ones aside).
bool is_joined(std::span<const ProcessMemory::Region> batch, const iovec* remote, const size_t* first_region,
               size_t r) {
  return batch[first_region[r]].size != remote[r].iov_len;
}

// The regions of the joined ranges that were read into `scratch`, in range
// order while it lasted (as read_many placed them), copied to where they belong.
void copy_out_joined(std::span<const ProcessMemory::Region> batch, const iovec* remote,
                     const size_t* first_region, size_t remotes, const char* scratch, size_t scratch_size) {
  size_t scratch_used = 0;
  for (size_t r = 0; r < remotes; ++r) {
    const size_t length = remote[r].iov_len;
    if (!is_joined(batch, remote, first_region, r) || scratch_used + length > scratch_size) continue;
    const uint64_t base = reinterpret_cast<uint64_t>(remote[r].iov_base);
    for (size_t i = first_region[r]; i < first_region[r + 1]; ++i) {
      const ProcessMemory::Region& region = batch[i];
      if (region.size > 0) std::memcpy(region.out, scratch + scratch_used + (region.addr - base), region.size);
    }
    scratch_used += length;
  }
}

}  // namespace

// The kernel pins the target's pages once per remote range (a page-table walk
// under the target's mmap lock), so consecutive regions that lie, in
// ascending order, on a page the previous one already touched are read as one
// range. That page is mapped (its other bytes are being read), so the wider
// range cannot fault, and the target's bytes are still read in region order,
// as callers rely on. A joined range is read into a scratch buffer and its
// regions copied out after the call: one local iovec per remote range keeps
// a sample's call within the kernel's eight on-stack iovecs (more cost it an
// allocation), where one per region and gap did not. A batch whose joined
// ranges outgrow the scratch buffer reads the rest region by region, the
// bytes between them into a throwaway page.
bool ProcessMemory::read_many(std::span<const Region> regions) const noexcept {
  // Batches of 256 regions keep the vectors on the stack (the kernel takes
  // up to IOV_MAX per side): a sample's speculative read of a deep stack
  // (one region per frame on 3.8-3.10, per code object on all) fits in one.
  constexpr size_t kBatch = 256;
  static_assert(2 * kBatch <= IOV_MAX);
  iovec local[2 * kBatch];
  iovec remote[kBatch];
  size_t first_region[kBatch + 1];  // of each remote range, in regions
  char scratch[2 * kPageSize];
  char gap_sink[kPageSize];
  for (size_t start = 0; start < regions.size(); start += kBatch) {
    const std::span<const Region> batch = regions.subspan(start, std::min(kBatch, regions.size() - start));
    // The remote ranges: each region joins the range before it when it
    // starts at or after that range's end, on the page where it ends.
    size_t remotes = 0, total = 0;
    uint64_t range_end = 0;  // of remote[remotes - 1]
    for (size_t i = 0; i < batch.size(); ++i) {
      const Region& region = batch[i];
      if (region.size == 0) continue;
      const uint64_t end = region.addr + region.size;
      if (remotes > 0 && region.addr >= range_end && end <= page_end(range_end)) {
        remote[remotes - 1].iov_len += end - range_end;
        total += end - range_end;
      } else {
        first_region[remotes] = i;
        remote[remotes++] = {reinterpret_cast<void*>(region.addr), region.size};
        total += region.size;
      }
      range_end = end;
    }
    if (remotes == 0) continue;
    first_region[remotes] = batch.size();
    // The local side: a range of one region straight into it; a joined one
    // into the scratch buffer while it lasts, else region by region.
    size_t locals = 0, scratch_used = 0;
    for (size_t r = 0; r < remotes; ++r) {
      const size_t length = remote[r].iov_len;
      if (!is_joined(batch, remote, first_region, r)) {
        local[locals++] = {batch[first_region[r]].out, length};
      } else if (scratch_used + length <= sizeof scratch) {
        local[locals++] = {scratch + scratch_used, length};
        scratch_used += length;
      } else {
        uint64_t at = reinterpret_cast<uint64_t>(remote[r].iov_base);
        for (size_t i = first_region[r]; i < first_region[r + 1]; ++i) {
          const Region& region = batch[i];
          if (region.size == 0) continue;
          if (region.addr > at) local[locals++] = {gap_sink, region.addr - at};
          local[locals++] = {region.out, region.size};
          at = region.addr + region.size;
        }
      }
    }
    system_calls_.fetch_add(1, std::memory_order_relaxed);
    ssize_t got = ::process_vm_readv(pid_, local, locals, remote, remotes, 0);
    if (got != static_cast<ssize_t>(total)) {
      if (got >= 0) errno = EFAULT;
      return false;
    }
    copy_out_joined(batch, remote, first_region, remotes, scratch, sizeof scratch);
  }
  return true;
}

namespace {

constexpr int kCapSysPtrace = 19;  // linux/capability.h

bool have_cap_sys_ptrace() {
  auto status = read_proc_file("/proc/self/status");
  if (!status) return false;
  std::string hex(status_field(*status, "CapEff"));
  unsigned long long caps = std::strtoull(hex.c_str(), nullptr, 16);
  return (caps >> kCapSysPtrace) & 1;
}

// The real uid of `pid`, or -1 when unknown.
long long owner_uid(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return -1;
  std::string uids(status_field(*status, "Uid"));
  if (uids.empty()) return -1;
  return std::strtoll(uids.c_str(), nullptr, 10);
}

int yama_ptrace_scope() {
  auto text = read_proc_file("/proc/sys/kernel/yama/ptrace_scope");
  return text ? std::atoi(text->c_str()) : -1;  // -1: no Yama
}

}  // namespace

std::string explain_access_denied(pid_t pid) {
  const bool capable = have_cap_sys_ptrace();
  const long long target_uid = owner_uid(pid);
  const long long our_uid = static_cast<long long>(::geteuid());
  std::vector<std::string> causes;
  if (target_uid >= 0 && target_uid != our_uid && !capable) {
    causes.push_back(fmt::format(
        "process {} belongs to uid {} and stepscope runs as uid {}: run stepscope as the same "
        "user, or as root (sudo)",
        pid, target_uid, our_uid));
  }
  switch (yama_ptrace_scope()) {
    case 1:
      if (!capable) {
        causes.push_back(
            "Yama's kernel.yama.ptrace_scope is 1, which only lets a process read its own "
            "children: launch the program under stepscope (record -- CMD), run stepscope as "
            "root, or allow it with 'sudo sysctl kernel.yama.ptrace_scope=0'");
      }
      break;
    case 2:
      if (!capable) {
        causes.push_back(
            "Yama's kernel.yama.ptrace_scope is 2 (admin only): run stepscope as root with "
            "CAP_SYS_PTRACE, or 'sudo sysctl kernel.yama.ptrace_scope=0'");
      }
      break;
    case 3:
      causes.push_back(
          "Yama's kernel.yama.ptrace_scope is 3, which forbids reading any other process until "
          "reboot: set it to 0 or 1 at boot (sysctl.d) and reboot");
      break;
    default:
      break;
  }
  if (our_uid == 0 && !capable) {
    causes.push_back(
        "stepscope runs as root but without CAP_SYS_PTRACE, as in a container: start the "
        "container with 'docker run --cap-add SYS_PTRACE' (Kubernetes: securityContext."
        "capabilities.add: [SYS_PTRACE])");
  }
  if (causes.empty()) {
    causes.push_back(fmt::format(
        "the kernel refused to let stepscope read process {}'s memory although its owner, "
        "Yama and our capabilities allow it; the process may have made itself non-dumpable "
        "(prctl PR_SET_DUMPABLE, setuid programs) or a security module (SELinux, AppArmor, "
        "seccomp) forbids process_vm_readv",
        pid));
  }
  std::string text = fmt::format("cannot read the memory of process {}: ", pid);
  for (size_t i = 0; i < causes.size(); ++i) {
    if (i > 0) text += "; also, ";
    text += causes[i];
  }
  return text;
}

}  // namespace stepscope
