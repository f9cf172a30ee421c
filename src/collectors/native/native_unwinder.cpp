#include "collectors/native/native_unwinder.hpp"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "collectors/native/symbol_index.hpp"
#include "collectors/process/memory_maps.hpp"
#include "util/demangle.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// A walk deeper than this is a loop in a corrupt stack, or recursion no
// profile needs in full.
constexpr size_t kMostFrames = 512;
// /proc/PID/maps is read again, when a pc lies in no known file, at most
// this often: a program that runs JIT-compiled code would otherwise have it
// read at every sample.
constexpr int64_t kMapsRereadNs = 200'000'000;
// Past this many distinct pcs the cache starts over (the names stay).
constexpr size_t kMostCachedPcs = size_t{1} << 20;
// An address between a file's sized functions is looked up in libdwfl, which
// also knows assembly labels without a size, in files this small only: its
// lookup scans every symbol.
constexpr int kMostScannedSymbols = 20'000;

int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

bool is_python_eval(std::string_view function) {
  constexpr std::string_view kEval = "_PyEval_EvalFrameDefault";
  return function == kEval || (function.starts_with(kEval) && function[kEval.size()] == '.');
}

// A dynamic symbol's name without its version (`__libc_start_main@@GLIBC_2.34`),
// which libdwfl appends and a profile only splits functions by.
std::string_view without_version(std::string_view symbol) {
  size_t at = symbol.find('@');
  return at == std::string_view::npos || at == 0 ? symbol : symbol.substr(0, at);
}

bool ends_with_deleted(const char* name) {
  const char* space = std::strrchr(name, ' ');
  return space != nullptr && std::strcmp(space, " (deleted)") == 0;
}

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};

}  // namespace

struct NativeUnwinder::State {
  struct Resolved {
    std::string_view function;
    std::string_view module;
    bool python_eval = false;
  };

  State(pid_t target, std::shared_ptr<SymbolIndexes> shared_indexes);
  bool read_maps(std::string& why);
  int walk(const UserStackSample& sample, std::vector<NativeFrame>& out);
  int add_frame(Dwfl_Frame* frame);
  const Resolved* resolve(uint64_t address);
  const char* function_name(Dwfl_Module* module, uint64_t address);
  std::string_view intern(std::string text) { return *strings.insert(std::move(text)).first; }
  UnwindResult result(int walk_status, size_t copied, const std::vector<NativeFrame>& out);

  // libdwfl's callbacks: the process's files, and the one sampled thread
  // whose registers and stack come from the sample alone.
  static int find_elf(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
                      char** file_name, Elf** elf);
  static int find_debuginfo(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
                            const char* file_name, const char* debuglink, GElf_Word crc, char** debuginfo_name);
  static int own_module(Dwfl_Module*, void** userdata, const char*, Dwarf_Addr, void* arg);
  static pid_t next_thread(Dwfl*, void* arg, void** thread_arg);
  static bool get_thread(Dwfl*, pid_t tid, void* arg, void** thread_arg);
  static bool memory_read(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* arg);
  static bool set_initial_registers(Dwfl_Thread* thread, void* thread_arg);
  static int on_frame(Dwfl_Frame* frame, void* arg) { return static_cast<State*>(arg)->add_frame(frame); }

  static constexpr Dwfl_Callbacks kCallbacks{&find_elf, &find_debuginfo, nullptr, nullptr};
  static constexpr Dwfl_Thread_Callbacks kThreadCallbacks{
      &next_thread, &get_thread, &memory_read, &set_initial_registers, nullptr, nullptr};

  pid_t pid;
  std::unique_ptr<Dwfl, DwflDeleter> dwfl;
  int64_t maps_read_ns = 0;
  // The walk in progress: what the callbacks read and write.
  const UserStackSample* sample = nullptr;
  std::vector<NativeFrame>* frames = nullptr;
  bool unknown_pc = false;        // a frame's pc lay in no known file
  bool reread_due = false;        // ... and the maps may be read again now
  bool frame_cap_reached = false;
  // A read beyond the stack copy's end: libdwfl takes a return address it
  // cannot read for the end of the stack, so a walk that ends after one is
  // cut short, and a frame found after one is not trusted.
  bool read_past_copy = false;
  int unwind_error = 0;  // the latest libdwfl error of the unwinding itself
  // Names by pc (the return address less one for callers' frames): a pc seen
  // before costs one lookup. The views point into `strings`, whose nodes
  // never move.
  std::unordered_map<uint64_t, Resolved> pcs;
  // Each file's functions by address, when a pc first falls in it: made, or
  // found ready where another process maps the same file.
  std::shared_ptr<SymbolIndexes> indexes;
  std::unordered_map<Dwfl_Module*, std::shared_ptr<const SymbolIndex>> symbols;
  std::unordered_set<std::string> strings;
};

NativeUnwinder::State::State(pid_t target, std::shared_ptr<SymbolIndexes> shared_indexes)
    : pid(target), indexes(std::move(shared_indexes)) {
  if (std::string why; !read_maps(why)) throw InputError(fmt::format("process {}: {}", pid, why));
}

// Reads the files /proc/PID/maps lists into a new libdwfl session, which
// replaces the last one. Each read starts over rather than adding to it: a
// file unmapped since (a library dlclose'd, or /etc/ld.so.cache, which
// dlopen maps only while it runs) would otherwise go on covering addresses
// that now hold another.
bool NativeUnwinder::State::read_maps(std::string& why) {
  std::unique_ptr<Dwfl, DwflDeleter> session(dwfl_begin(&kCallbacks));
  if (!session) {
    why = fmt::format("elfutils could not start: {}", dwfl_errmsg(-1));
    return false;
  }
  dwfl_report_begin(session.get());
  int status = dwfl_linux_proc_report(session.get(), pid);
  dwfl_report_end(session.get(), nullptr, nullptr);
  if (status != 0) {
    why = fmt::format("cannot read /proc/{}/maps: {}", pid, status > 0 ? std::strerror(status) : dwfl_errmsg(-1));
    return false;
  }
  dwfl_getmodules(session.get(), &own_module, this, 0);
  // Registers and stack from the samples, never from the live process:
  // dwfl_linux_proc_attach would ptrace-stop it.
  if (!dwfl_attach_state(session.get(), nullptr, pid, &kThreadCallbacks, this)) {
    why = fmt::format("none of its mapped files tells its architecture ({})", dwfl_errmsg(-1));
    return false;
  }
  dwfl = std::move(session);
  maps_read_ns = monotonic_ns();
  // Both are keyed by the old session's modules and addresses.
  symbols.clear();
  pcs.clear();
  return true;
}

int NativeUnwinder::State::own_module(Dwfl_Module*, void** userdata, const char*, Dwarf_Addr, void* arg) {
  *userdata = arg;
  return DWARF_CB_OK;
}

// A deleted file that is still mapped, whole, through /proc/PID/map_files
// (its symbol table too, which the mapped segments lack); empty when the
// kernel does not let us open it.
std::string mapped_file_path(pid_t pid, std::string_view name) {
  auto maps = read_memory_maps(pid);
  if (!maps) return {};
  for (const MemoryMapping& mapping : *maps) {
    if (mapping.path == name && mapping.offset == 0) {
      return fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, mapping.start, mapping.end);
    }
  }
  return {};
}

// The file through /proc/PID/root, so that a process in another mount
// namespace (a container) has its own files read; a deleted file through
// map_files; the vDSO (and a deleted file map_files refuses) from its
// memory, as libdwfl reads them.
int NativeUnwinder::State::find_elf(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
                                    char** file_name, Elf** elf) {
  const auto* state = static_cast<const State*>(*userdata);
  if (state == nullptr || name[0] != '/') {
    return dwfl_linux_proc_find_elf(module, userdata, name, base, file_name, elf);
  }
  std::string path = ends_with_deleted(name) ? mapped_file_path(state->pid, name)
                                             : fmt::format("/proc/{}/root{}", state->pid, name);
  if (path.empty()) return dwfl_linux_proc_find_elf(module, userdata, name, base, file_name, elf);
  struct stat status{};
  // Only regular files: a mapped device could block the open.
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return -1;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  *file_name = ::strdup(path.c_str());
  if (*file_name == nullptr) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Separate debug files from this machine only: where DEBUGINFOD_URLS is set
// (Fedora's and Ubuntu's default), libdwfl's standard search would download
// them, stalling the sampler for as long as a download takes.
int NativeUnwinder::State::find_debuginfo(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
                                          const char* file_name, const char* debuglink, GElf_Word crc,
                                          char** debuginfo_name) {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  if (urls != nullptr && urls[0] != '\0') return -1;
  return dwfl_standard_find_debuginfo(module, userdata, name, base, file_name, debuglink, crc, debuginfo_name);
}

pid_t NativeUnwinder::State::next_thread(Dwfl*, void* arg, void** thread_arg) {
  auto* state = static_cast<State*>(arg);
  if (*thread_arg != nullptr || state->sample == nullptr) return 0;
  *thread_arg = state;
  return static_cast<pid_t>(state->sample->tid);
}

bool NativeUnwinder::State::get_thread(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
  auto* state = static_cast<State*>(arg);
  if (state->sample == nullptr || state->sample->tid != tid) return false;
  *thread_arg = state;
  return true;
}

// Words of the copied stack, [rsp, rsp + its size); anything else (the heap,
// another thread's stack, beyond the copy) is unknown.
bool NativeUnwinder::State::memory_read(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* arg) {
  auto* state = static_cast<State*>(arg);
  const UserStackSample& sample = *state->sample;
  uint64_t sp = sample.regs[kDwarfRsp];
  // Below the stack pointer lie registers an epilogue has popped already,
  // which CFI may still place there: unknown, and harmless to the walk.
  if (address < sp) return false;
  uint64_t offset = address - sp;
  if (offset >= sample.stack.size() || sample.stack.size() - offset < sizeof *result) {
    state->read_past_copy = true;
    return false;
  }
  std::memcpy(result, sample.stack.data() + offset, sizeof *result);
  return true;
}

bool NativeUnwinder::State::set_initial_registers(Dwfl_Thread* thread, void* thread_arg) {
  const UserStackSample& sample = *static_cast<State*>(thread_arg)->sample;
  if (!dwfl_thread_state_registers(thread, 0, kUnwindRegisterCount, sample.regs.data())) return false;
  dwfl_thread_state_register_pc(thread, sample.regs[kDwarfRip]);
  return true;
}

int NativeUnwinder::State::walk(const UserStackSample& sample_to_walk, std::vector<NativeFrame>& out) {
  out.clear();
  sample = &sample_to_walk;
  frames = &out;
  unknown_pc = reread_due = frame_cap_reached = read_past_copy = false;
  unwind_error = 0;
  int status = dwfl_getthread_frames(dwfl.get(), static_cast<pid_t>(sample_to_walk.tid), &on_frame, this);
  sample = nullptr;
  frames = nullptr;
  return status;
}

int NativeUnwinder::State::add_frame(Dwfl_Frame* frame) {
  // Finding this frame needed a word beyond the copy: its registers are
  // incomplete, and libdwfl then falls back on guesses (an rbp chain).
  if (read_past_copy) return DWARF_CB_ABORT;
  if (frames->size() >= kMostFrames) {
    frame_cap_reached = true;
    return DWARF_CB_ABORT;
  }
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  // Asking for `activation` unwound the caller's frame: its error is kept
  // apart from those a failed symbol lookup leaves (libdwfl keeps only one).
  if (int error = dwfl_errno(); error != 0) unwind_error = error;
  // A caller's pc is a return address, which may be the first byte after
  // its function (a call that never returns): its call is the byte before.
  const Resolved* names = resolve(activation || pc == 0 ? pc : pc - 1);
  dwfl_errno();
  if (names == nullptr) {
    frames->push_back(NativeFrame{pc, {}, {}, false});
    if (!unknown_pc) reread_due = monotonic_ns() - maps_read_ns >= kMapsRereadNs;
    unknown_pc = true;
    // The walk starts again once the maps are read, so this one can stop.
    return reread_due ? DWARF_CB_ABORT : DWARF_CB_OK;
  }
  frames->push_back(NativeFrame{pc, names->function, names->module, names->python_eval});
  return DWARF_CB_OK;
}

// The names of `address`; null, and nothing cached, when no known ELF file
// covers it (the maps read later may add one).
const NativeUnwinder::State::Resolved* NativeUnwinder::State::resolve(uint64_t address) {
  if (auto found = pcs.find(address); found != pcs.end()) return &found->second;
  Dwfl_Module* module = dwfl_addrmodule(dwfl.get(), address);
  // A mapped file that is not ELF holds no code: the maps were read while
  // it was there, and something else may be mapped in its place now.
  if (Dwarf_Addr bias = 0; module == nullptr || dwfl_module_getelf(module, &bias) == nullptr) return nullptr;
  if (pcs.size() >= kMostCachedPcs) pcs.clear();
  Resolved names;
  const char* function = function_name(module, address);
  if (function != nullptr) names.function = intern(demangled(without_version(function)));
  const char* path = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (path != nullptr) names.module = intern(path);
  names.python_eval = is_python_eval(names.function);
  return &pcs.emplace(address, names).first->second;
}

const char* NativeUnwinder::State::function_name(Dwfl_Module* module, uint64_t address) {
  std::shared_ptr<const SymbolIndex>& index = symbols[module];
  if (!index) index = indexes->of(module);
  if (std::optional<FoundSymbol> found = index->find(module, address)) return found->name;
  if (index->symbol_count() > kMostScannedSymbols) return nullptr;
  GElf_Off offset = 0;
  GElf_Sym symbol{};
  return dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr, nullptr);
}

UnwindResult NativeUnwinder::State::result(int walk_status, size_t copied, const std::vector<NativeFrame>& out) {
  UnwindResult result;
  int error = dwfl_errno();  // read and cleared: the next walk starts without it
  if (error == 0) error = unwind_error;
  if (walk_status == 0 && !read_past_copy) {
    result.complete = true;
    return result;
  }
  if (frame_cap_reached) {
    result.stop_reason = fmt::format("the stack is deeper than {} frames", kMostFrames);
  } else if (read_past_copy) {
    result.stop_reason = fmt::format("the stack goes on beyond the {} bytes copied", copied);
  } else {
    result.stop_reason = error != 0 ? dwfl_errmsg(error) : "the unwinder stopped without saying why";
  }
  if (!out.empty() && out.back().module.empty()) {
    result.stop_reason = fmt::format("pc {:#x} lies in no mapped file: {}", out.back().pc, result.stop_reason);
  }
  return result;
}

NativeUnwinder::NativeUnwinder(pid_t pid, std::shared_ptr<SymbolIndexes> indexes)
    : state_(std::make_unique<State>(pid, std::move(indexes))) {}

NativeUnwinder::~NativeUnwinder() = default;

UnwindResult NativeUnwinder::unwind(const UserStackSample& sample, std::vector<NativeFrame>& out) {
  State& state = *state_;
  int status = state.walk(sample, out);
  if (state.unknown_pc && state.reread_due) {
    // A library loaded since the maps were read (`import torch`): once more
    // with it known.
    dwfl_errno();
    // A process that has just exited keeps the session it had.
    if (std::string why; state.read_maps(why)) status = state.walk(sample, out);
  }
  return state.result(status, sample.stack.size(), out);
}

}  // namespace stepscope
