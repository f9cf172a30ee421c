#include "collectors/python/process.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "collectors/process/memory_maps.hpp"
#include "collectors/python/debug_offsets.hpp"
#include "collectors/python/elf_symbols.hpp"
#include "collectors/python/offsets_generated.hpp"
#include "collectors/python/runtime_scan.hpp"
#include "collectors/python/version.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

using python::PythonLayout;
using python::PythonVersion;

bool process_exists(pid_t pid) {
  struct stat info;
  return pid > 0 && ::stat(fmt::format("/proc/{}", pid).c_str(), &info) == 0;
}

[[noreturn]] void throw_unreadable(pid_t pid) {
  if (errno == ESRCH || !process_exists(pid)) {
    throw InputError(fmt::format("no process with pid {}", pid));
  }
  throw InputError(explain_access_denied(pid));
}

bool is_python_image(const std::string& path, bool& is_library) {
  std::string_view name = std::string_view(path).substr(path.rfind('/') + 1);
  is_library = name.starts_with("libpython");
  if (!is_library && !name.starts_with("python")) return false;
  std::string_view rest = name.substr(is_library ? 9 : 6);
  // python, python3, python3.11, libpython3.11.so.1.0; not python-config or pythonw-helper.
  return rest.empty() || (rest[0] >= '0' && rest[0] <= '9');
}

// The mapped files that may hold the interpreter: libpython first (a
// dynamically linked python executable holds only main), then executables.
std::vector<std::string> python_images(const std::vector<MemoryMapping>& mappings) {
  std::vector<std::string> libraries, executables;
  for (const MemoryMapping& mapping : mappings) {
    bool is_library = false;
    if (mapping.path.empty() || !is_python_image(mapping.path, is_library)) continue;
    auto& list = is_library ? libraries : executables;
    if (std::find(list.begin(), list.end(), mapping.path) == list.end()) list.push_back(mapping.path);
  }
  libraries.insert(libraries.end(), executables.begin(), executables.end());
  return libraries;
}

// The symbols an attach looks up, found in one pass over the image's symbol tables.
struct ImageSymbols {
  std::optional<uint64_t> py_version, runtime, code_type;

  explicit ImageSymbols(const ElfImage& image) {
    constexpr std::string_view kNames[] = {"Py_Version", "_PyRuntime", "PyCode_Type"};
    auto found = image.symbol_addresses(kNames);
    py_version = found[0];
    runtime = found[1];
    code_type = found[2];
  }
};

std::optional<PythonVersion> detect_version(const ProcessMemory& memory, const ElfImage& image,
                                            const ImageSymbols& symbols) {
  if (const auto& address = symbols.py_version) {
    uint64_t hex = 0;
    if (!memory.read_value(*address, hex)) throw_unreadable(memory.pid());
    return python::version_from_hex(hex);
  }
  auto from_name = python::version_from_file_name(image.path());
  if (!from_name) return std::nullopt;
  if (auto exact = python::version_from_rodata(image.section_bytes(".rodata"), from_name->major,
                                               from_name->minor)) {
    return exact;
  }
  return from_name;
}

std::optional<PythonLayout> layout_for(const ProcessMemory& memory, const PythonVersion& version,
                                       uint64_t runtime, std::string* why_not) {
  for (const PythonLayout* layout : python::kGeneratedLayouts) {
    if (layout->major == version.major && layout->minor == version.minor) return *layout;
  }
  if (version.major == 3 && version.minor >= 13) {
    std::string error;
    auto layout = python::layout_from_debug_offsets(memory, runtime, &error);
    if (!layout && errno == EPERM) throw_unreadable(memory.pid());
    if (!layout) *why_not = fmt::format("Python {}: {}", version.text, error);
    return layout;
  }
  *why_not = fmt::format("Python {} is not supported (stepscope reads CPython 3.8 to 3.13)",
                         version.text);
  return std::nullopt;
}

// The first thread of the first interpreter must point back to it: a cheap
// proof that `runtime` and the layout are right, e.g. for the section fallback.
bool looks_like_runtime(const ProcessMemory& memory, const PythonLayout& layout,
                        uint64_t runtime) {
  uint64_t interp = 0, tstate = 0, back = 0;
  if (!memory.read_value(runtime + layout.runtime.interpreters_head, interp)) {
    if (errno == EPERM) throw_unreadable(memory.pid());
    return false;
  }
  if (interp == 0) return true;  // not initialized yet, or finalized
  if (!memory.read_value(interp + layout.interpreter.threads_head, tstate)) return false;
  if (tstate == 0) return true;
  return memory.read_value(tstate + layout.thread.interp, back) && back == interp;
}

// Where the interpreter lives in one image, and how to read it.
struct Interpreter {
  PythonVersion version;
  PythonLayout layout;
  uint64_t runtime = 0;
  uint64_t code_type = 0;
};

// The outcome of looking at one image: an interpreter, or a reason, which
// is final (`unsupported`) when the image is Python but one we cannot read.
struct Found {
  std::optional<Interpreter> interpreter;
  bool unsupported = false;
};

// _PyRuntime by symbol, by section (3.11+ builds keep it in .PyRuntime even
// when stripped), and as a last resort by scanning the image's data.
std::optional<uint64_t> locate_runtime(const ProcessMemory& memory, const ElfImage& image,
                                       const ImageSymbols& symbols, const PythonVersion& version,
                                       const std::vector<MemoryMapping>& mappings) {
  if (symbols.runtime) return symbols.runtime;
  if (auto section = image.section(".PyRuntime")) return section->address;
  if (version.minor >= 13) return python::scan_for_debug_cookie(memory, mappings, image.path());
  for (const PythonLayout* layout : python::kGeneratedLayouts) {
    if (layout->minor == version.minor) {
      return python::scan_for_runtime(memory, *layout, mappings, image.path());
    }
  }
  return std::nullopt;
}

Found find_interpreter(const ProcessMemory& memory, const std::string& path,
                       const std::vector<MemoryMapping>& mappings, std::string& reason) {
  Found found;
  auto image = ElfImage::open(memory.pid(), path, mappings, &reason);
  if (!image) return found;
  const ImageSymbols symbols(*image);
  auto version = detect_version(memory, *image, symbols);
  if (!version) {
    reason = fmt::format("cannot tell the Python version of {}", path);
    return found;
  }
  auto runtime = locate_runtime(memory, *image, symbols, *version, mappings);
  if (!runtime) {
    reason = fmt::format("cannot find _PyRuntime in {}", path);
    return found;
  }
  auto layout = layout_for(memory, *version, *runtime, &reason);
  if (!layout) {
    found.unsupported = true;
    return found;
  }
  if (!looks_like_runtime(memory, *layout, *runtime)) {
    reason = fmt::format("_PyRuntime in {} does not hold a Python {} interpreter", path,
                         version->text);
    return found;
  }
  found.interpreter.emplace(Interpreter{*version, *layout, *runtime,
                            symbols.code_type.value_or(0)});
  return found;
}

}  // namespace

PythonProcess::PythonProcess(pid_t pid, std::string version, std::string image_path,
                             const PythonLayout& layout, uint64_t runtime, uint64_t code_type)
    : memory_(pid),
      version_(std::move(version)),
      image_path_(std::move(image_path)),
      layout_(layout),
      reader_(memory_, layout_, runtime, code_type) {}

std::unique_ptr<PythonProcess> PythonProcess::attach(pid_t pid, std::string* why_not) {
  std::string ignored;
  if (why_not == nullptr) why_not = &ignored;
  if (!process_exists(pid)) throw InputError(fmt::format("no process with pid {}", pid));
  auto mappings = read_memory_maps(pid);
  if (!mappings) throw_unreadable(pid);
  if (mappings->empty()) {
    *why_not = "not a Python process (no memory mappings: a kernel thread or a zombie)";
    return nullptr;
  }
  std::vector<std::string> images = python_images(*mappings);
  if (images.empty()) {
    *why_not = "not a Python process (no libpython or python executable mapped)";
    return nullptr;
  }
  ProcessMemory memory(pid);
  std::vector<std::string> reasons;
  for (const std::string& path : images) {
    std::string reason;
    Found found = find_interpreter(memory, path, *mappings, reason);
    if (const auto& interpreter = found.interpreter) {
      return std::unique_ptr<PythonProcess>(
          new PythonProcess(pid, interpreter->version.text, path, interpreter->layout,
                            interpreter->runtime, interpreter->code_type));
    }
    if (found.unsupported) {
      *why_not = reason;
      return nullptr;
    }
    reasons.push_back(reason);
  }
  *why_not = "no Python interpreter found: ";
  for (size_t i = 0; i < reasons.size(); ++i) *why_not += (i > 0 ? "; " : "") + reasons[i];
  return nullptr;
}

bool PythonProcess::sample(std::vector<PythonThreadStack>& out, python::ThreadActivity* activity) {
  // A failed read is read again once, at once, unless the process has no
  // memory left: a read torn by the target usually succeeds the second time
  // (imports make and free frames and code objects fast), and the round
  // keeps its samples.
  bool read = reader_.read(out, last_error_, activity) ||
              (!reader_.memory_gone() && reader_.read(out, last_error_, activity));
  if (!read) {
    out.clear();
    return false;
  }
  if (layout_.thread.native_thread_id == python::kAbsent) pthread_tids_.fill(memory_, out);
  return true;
}

}  // namespace stepscope
