#include "collectors/native/perf_stack_sampler.hpp"

#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace stepscope {

namespace {

// The registers the kernel copies, in the order of their perf numbers (the
// order a sample holds them in), and each one's DWARF number.
struct CopiedRegister {
  int perf;
  size_t dwarf;
};
constexpr CopiedRegister kCopiedRegisters[] = {
    {PERF_REG_X86_AX, 0},   {PERF_REG_X86_BX, 3},   {PERF_REG_X86_CX, 2},   {PERF_REG_X86_DX, 1},
    {PERF_REG_X86_SI, 4},   {PERF_REG_X86_DI, 5},   {PERF_REG_X86_BP, 6},   {PERF_REG_X86_SP, 7},
    {PERF_REG_X86_IP, 16},  {PERF_REG_X86_R8, 8},   {PERF_REG_X86_R9, 9},   {PERF_REG_X86_R10, 10},
    {PERF_REG_X86_R11, 11}, {PERF_REG_X86_R12, 12}, {PERF_REG_X86_R13, 13}, {PERF_REG_X86_R14, 14},
    {PERF_REG_X86_R15, 15},
};
static_assert(std::size(kCopiedRegisters) == kUnwindRegisterCount);

constexpr uint64_t register_mask() {
  uint64_t mask = 0;
  for (const CopiedRegister& reg : kCopiedRegisters) mask |= uint64_t{1} << reg.perf;
  return mask;
}

// The kernel's largest user stack copy: a record's size is 16 bits, and the
// copy a multiple of 8.
constexpr uint32_t kLargestStackCopy = 65528;

// A sample's fixed part before its stack copy: header, pid/tid, time, abi and
// the registers; then the copy's size and, after it, its valid length.
constexpr size_t kSampleHeadBytes = sizeof(perf_event_header) + 8 + 8 + 8 + 8 * kUnwindRegisterCount;

size_t sample_record_bytes(uint32_t stack_bytes) { return kSampleHeadBytes + 8 + stack_bytes + 8; }

// The fewest data pages, a power of two as the kernel requires, that hold
// `records` samples whole.
size_t data_pages_for(uint32_t stack_bytes, size_t records, size_t page) {
  size_t needed = (records * sample_record_bytes(stack_bytes) + page - 1) / page;
  size_t pages = 1;
  while (pages < needed) pages *= 2;
  return pages;
}

perf_event_attr sampling_attributes(int64_t period_ns, uint32_t stack_bytes) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  // Task-clock rather than cycles: a software event every kernel and VM
  // offers, counting the thread's CPU time only, so an idle thread costs nothing.
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = static_cast<uint64_t>(period_ns);
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = register_mask();
  attr.sample_stack_user = stack_bytes;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;  // the Run's clock
  // Time in the kernel counts too where allowed (root, CAP_PERFMON,
  // perf_event_paranoid 1 or less): a thread in a system call (reading a
  // file, waiting on a pipe) is then copied where it entered the kernel,
  // which is the Python line the sampler reads meanwhile.
  attr.exclude_kernel = 0;
  attr.exclude_hv = 1;
  // The ring is overwritten, newest record first (Linux 4.7+): only the
  // newest copy matters, and a full ring then keeps the newest rather than
  // dropping it. Nobody polls the descriptor: the sampler reads the ring at
  // each of its rounds.
  attr.write_backward = 1;
  return attr;
}

std::string perf_event_paranoid() {
  std::ifstream file("/proc/sys/kernel/perf_event_paranoid");
  std::string value;
  if (!(file >> value)) return {};
  return value;
}

// What kernel.perf_event_paranoid's value allows a user without CAP_PERFMON.
std::string paranoid_cause(const std::string& paranoid) {
  if (paranoid.empty()) return "kernel.perf_event_paranoid could not be read";
  if (paranoid.find_first_not_of("-0123456789") != std::string::npos || paranoid.size() > 3) {
    return "kernel.perf_event_paranoid is " + paranoid;
  }
  if (std::stoi(paranoid) >= 3) {
    return "kernel.perf_event_paranoid is " + paranoid + ", which refuses perf events to unprivileged users";
  }
  return "kernel.perf_event_paranoid is " + paranoid +
         ", which allows perf events on this user's own processes only, so the target runs as another user or a "
         "container's seccomp profile refuses the call";
}

std::string explain_mmap_refusal(int error_number, size_t bytes, pid_t tid) {
  if (error_number == EPERM) {
    return fmt::format(
        "the kernel refused {} KiB of perf ring buffer for thread {}: this user's share of locked "
        "perf memory (kernel.perf_event_mlock_kb per CPU, then the memlock limit) is spent. Raise it with "
        "`sudo sysctl kernel.perf_event_mlock_kb=2048` or `ulimit -l`, or sample fewer threads.",
        bytes / 1024, tid);
  }
  return fmt::format("mapping the perf ring buffer of thread {} failed: {}. Nothing to set; retry later.", tid,
                     std::strerror(error_number));
}

// Maps the ring, read-only (which makes the kernel overwrite it): at least 4
// samples' worth, or fewer pages while the locked memory limit refuses, down
// to what holds 2 samples; the newest is all the sampler reads.
void* map_ring(int fd, uint32_t stack_bytes, pid_t tid, size_t& ring_bytes, std::string& error) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t fewest = data_pages_for(stack_bytes, 2, page);
  for (size_t pages = data_pages_for(stack_bytes, 4, page);; pages /= 2) {
    ring_bytes = (1 + pages) * page;
    void* ring = mmap(nullptr, ring_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (ring != MAP_FAILED) return ring;
    if (errno != EPERM || pages / 2 < fewest) {
      error = explain_mmap_refusal(errno, ring_bytes, tid);
      return nullptr;
    }
  }
}

// Reads what a record holds, never past its end.
class RecordReader {
 public:
  RecordReader(const char* begin, const char* end) : at_(begin), end_(end) {}
  bool read(void* out, size_t n) {
    if (static_cast<size_t>(end_ - at_) < n) return false;
    std::memcpy(out, at_, n);
    at_ += n;
    return true;
  }
  bool take(size_t n, const char*& out) {
    if (static_cast<size_t>(end_ - at_) < n) return false;
    out = at_;
    at_ += n;
    return true;
  }

 private:
  const char* at_;
  const char* end_;
};

// Parses one PERF_RECORD_SAMPLE (its bytes whole) into `out`; false when it
// holds no registers or is malformed.
bool parse_sample(const char* record, size_t size, UserStackSample& out) {
  RecordReader reader(record + sizeof(perf_event_header), record + size);
  uint32_t pid_tid[2];
  uint64_t time = 0, abi = 0;
  uint64_t regs[kUnwindRegisterCount];
  if (!reader.read(pid_tid, sizeof pid_tid) || !reader.read(&time, 8) || !reader.read(&abi, 8)) return false;
  if (abi == PERF_SAMPLE_REGS_ABI_NONE || !reader.read(regs, sizeof regs)) return false;
  uint64_t stack_size = 0, valid = 0;
  const char* stack = nullptr;
  if (!reader.read(&stack_size, 8) || !reader.take(stack_size, stack)) return false;
  if (stack_size != 0 && !reader.read(&valid, 8)) return false;
  out.tid = pid_tid[1];
  out.time_ns = static_cast<int64_t>(time);
  for (size_t i = 0; i < kUnwindRegisterCount; ++i) out.regs[kCopiedRegisters[i].dwarf] = regs[i];
  out.stack.assign(stack, stack + std::min(valid, stack_size));
  return true;
}

}  // namespace

std::unique_ptr<PerfStackSampler> PerfStackSampler::open(pid_t tid, int64_t period_ns, uint32_t stack_bytes,
                                                         std::string& error) {
  if (period_ns <= 0) {
    error = fmt::format("the sampling period must be positive, not {} ns", period_ns);
    return nullptr;
  }
  stack_bytes = std::clamp<uint32_t>((stack_bytes + 7) & ~uint32_t{7}, 8, kLargestStackCopy);
  perf_event_attr attr = sampling_attributes(period_ns, stack_bytes);
  UniqueFd fd(static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC)));
  if (!fd.valid() && (errno == EACCES || errno == EPERM)) {
    // User mode only: what perf_event_paranoid 2 (most distributions) allows
    // an unprivileged user.
    attr.exclude_kernel = 1;
    fd = UniqueFd(static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC)));
  }
  if (!fd.valid()) {
    error = fmt::format("thread {}: {}", tid, explain_perf_refusal(errno));
    return nullptr;
  }
  size_t ring_bytes = 0;
  void* ring = map_ring(fd.get(), stack_bytes, tid, ring_bytes, error);
  if (ring == nullptr) return nullptr;
  return std::unique_ptr<PerfStackSampler>(new PerfStackSampler(std::move(fd), ring, ring_bytes, tid));
}

PerfStackSampler::PerfStackSampler(UniqueFd fd, void* ring, size_t ring_bytes, pid_t tid)
    : fd_(std::move(fd)), ring_(ring), ring_bytes_(ring_bytes), tid_(tid),
      scratch_(std::numeric_limits<uint16_t>::max() + size_t{1}) {
  auto* meta = static_cast<const perf_event_mmap_page*>(ring_);
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // data_offset and data_size exist since Linux 4.1; before, the data
  // pages follow the first page.
  size_t offset = meta->data_size != 0 ? meta->data_offset : page;
  data_bytes_ = meta->data_size != 0 ? meta->data_size : ring_bytes_ - page;
  data_ = static_cast<const char*>(ring_) + offset;
}

PerfStackSampler::~PerfStackSampler() { munmap(ring_, ring_bytes_); }

void PerfStackSampler::copy_from_ring(uint64_t position, void* out, size_t n) const {
  size_t offset = position & (data_bytes_ - 1);
  size_t first = std::min(n, data_bytes_ - offset);
  std::memcpy(out, data_ + offset, first);
  std::memcpy(static_cast<char*>(out) + first, data_, n - first);
}

const char* PerfStackSampler::record_bytes(uint64_t position, size_t size) {
  size_t offset = position & (data_bytes_ - 1);
  if (offset + size <= data_bytes_) return data_ + offset;
  copy_from_ring(position, scratch_.data(), size);
  return scratch_.data();
}

// The kernel writes backward: the newest record starts at the head, older
// ones follow it. Output is paused while the newest is read, so that the
// kernel does not overwrite it meanwhile (a copy due then is skipped).
bool PerfStackSampler::take_newest(UserStackSample& out) {
  auto* meta = static_cast<perf_event_mmap_page*>(ring_);
  // Acquire: the records the kernel wrote before moving the head are visible.
  uint64_t head = std::atomic_ref(meta->data_head).load(std::memory_order_acquire);
  if (head == last_head_) return false;  // no copy since the last call
  ioctl(fd_.get(), PERF_EVENT_IOC_PAUSE_OUTPUT, 1);
  head = std::atomic_ref(meta->data_head).load(std::memory_order_acquire);
  last_head_ = head;
  bool found = false;
  for (uint64_t at = head; !found && at - head + sizeof(perf_event_header) <= data_bytes_;) {
    perf_event_header header;
    copy_from_ring(at, &header, sizeof header);
    // Zeros where the ring was never written, or a record the kernel was
    // overwriting: nothing older can be trusted.
    if (header.size < sizeof header || at - head + header.size > data_bytes_) break;
    if (header.type == PERF_RECORD_SAMPLE) {
      found = parse_sample(record_bytes(at, header.size), header.size, out) && out.tid == tid_;
      if (found) ++taken_;
    }
    at += header.size;
  }
  ioctl(fd_.get(), PERF_EVENT_IOC_PAUSE_OUTPUT, 0);
  return found;
}

std::string explain_perf_refusal(int error_number) {
  switch (error_number) {
    case EACCES:
    case EPERM:
      return fmt::format(
          "the kernel refused to sample another process's thread ({}): {}. Run `sudo sysctl "
          "kernel.perf_event_paranoid=2`, or grant stepscope CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8); a "
          "target of another user also needs CAP_SYS_PTRACE, and a container's seccomp profile must allow "
          "perf_event_open (Docker's does with --cap-add PERFMON).",
          std::strerror(error_number), paranoid_cause(perf_event_paranoid()));
    case ENOSYS:
    case ENOENT:
    case EOPNOTSUPP:
      return "this kernel (or the container's seccomp profile) does not offer perf events. Run on a kernel "
             "built with CONFIG_PERF_EVENTS, or allow perf_event_open in the container's seccomp profile.";
    case ESRCH:
      return "the thread exited before its sampling could start. Nothing to fix: it is no longer there to sample.";
    case EMFILE:
    case ENFILE:
      return "no file descriptor was left for another perf event (one per sampled thread). Raise the limit "
             "with `ulimit -n`.";
    case EINVAL:
      return "the kernel rejected the event's settings (a user stack copy with CLOCK_MONOTONIC times needs "
             "Linux 4.1 or later). Run on a newer kernel.";
    default:
      return fmt::format("perf_event_open failed: {} (errno {}). Nothing known fixes it; record without --native.",
                         std::strerror(error_number), error_number);
  }
}

}  // namespace stepscope
