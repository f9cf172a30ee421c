#include "collectors/python/runtime_scan.hpp"

#include <algorithm>
#include <cstring>

namespace stepscope::python {

namespace {

constexpr uint64_t kMaxScanBytes = 64ull << 20;

// The writable ranges of the image, with the anonymous mapping that follows
// its last one (the part of .bss beyond the file).
std::vector<MemoryMapping> data_ranges(const std::vector<MemoryMapping>& mappings,
                                       const std::string& path) {
  std::vector<MemoryMapping> ranges;
  for (size_t i = 0; i < mappings.size(); ++i) {
    if (mappings[i].path != path) continue;
    if (mappings[i].writable) ranges.push_back(mappings[i]);
    const bool next_is_bss = i + 1 < mappings.size() && mappings[i + 1].path.empty() &&
                             mappings[i + 1].writable && mappings[i + 1].start == mappings[i].end;
    if (next_is_bss) ranges.push_back(mappings[i + 1]);
  }
  return ranges;
}

bool readable(const std::vector<MemoryMapping>& mappings, uint64_t address) {
  auto it = std::upper_bound(mappings.begin(), mappings.end(), address,
                             [](uint64_t a, const MemoryMapping& m) { return a < m.start; });
  return it != mappings.begin() && address < std::prev(it)->end;
}

// `interp` heads an interpreter whose first thread belongs to it.
bool interpreter_checks_out(const ProcessMemory& memory, const PythonLayout& layout,
                            uint64_t interp) {
  uint64_t tstate = 0, back = 0;
  return memory.read_value(interp + layout.interpreter.threads_head, tstate) && tstate != 0 &&
         tstate % 8 == 0 && memory.read_value(tstate + layout.thread.interp, back) &&
         back == interp;
}

// _PyRuntime.interpreters.main is the head itself when there is one
// interpreter, else another interpreter that checks out; and (3.9+) the
// head points back to its _PyRuntime.
bool main_checks_out(const ProcessMemory& memory, const PythonLayout& layout, uint64_t runtime,
                     uint64_t head) {
  uint64_t main = 0, back = 0;
  if (layout.interpreter.runtime != kAbsent &&
      (!memory.read_value(head + layout.interpreter.runtime, back) || back != runtime)) {
    return false;
  }
  if (layout.runtime.interpreters_main == kAbsent) return true;
  if (!memory.read_value(runtime + layout.runtime.interpreters_main, main) || main == 0) {
    return false;
  }
  return main == head || interpreter_checks_out(memory, layout, main);
}

// Another global may hold the same interpreter pointer; _PyRuntime is the
// one whose GIL fields (when it holds the GIL) make sense too.
bool gil_checks_out(const ProcessMemory& memory, const PythonLayout& layout, uint64_t runtime,
                    uint64_t interp) {
  if (layout.gil.scope != GilScope::kRuntime) return true;
  int locked = -1;
  uint64_t holder = 1, back = 0;
  if (!memory.read_value(runtime + layout.gil.locked, locked) ||
      !memory.read_value(runtime + layout.gil.last_holder, holder) || (locked != 0 && locked != 1)) {
    return false;
  }
  return holder == 0 ||
         (memory.read_value(holder + layout.thread.interp, back) && back == interp);
}

}  // namespace

// Reads each data range of the image whole and offers every aligned word
// to `match(range start, words, index)` until it accepts one.
template <class Match>
std::optional<uint64_t> scan_words(const ProcessMemory& memory,
                                   const std::vector<MemoryMapping>& mappings,
                                   const std::string& path, Match match) {
  std::vector<uint64_t> words;
  for (const MemoryMapping& range : data_ranges(mappings, path)) {
    const uint64_t size = std::min(range.end - range.start, kMaxScanBytes);
    words.resize(size / 8);
    if (!memory.read(range.start, words.data(), words.size() * 8)) continue;
    for (size_t i = 0; i < words.size(); ++i) {
      if (auto found = match(range.start, words, i)) return found;
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> scan_for_runtime(const ProcessMemory& memory, const PythonLayout& layout,
                                         const std::vector<MemoryMapping>& mappings,
                                         const std::string& path) {
  const uint64_t head = layout.runtime.interpreters_head;
  return scan_words(memory, mappings, path,
                    [&](uint64_t start, const std::vector<uint64_t>& words,
                        size_t i) -> std::optional<uint64_t> {
                      const uint64_t interp = words[i];
                      if (i * 8 < head || interp == 0 || interp % 8 != 0 ||
                          !readable(mappings, interp)) {
                        return std::nullopt;
                      }
                      const uint64_t runtime = start + i * 8 - head;
                      if (interpreter_checks_out(memory, layout, interp) &&
                          main_checks_out(memory, layout, runtime, interp) &&
                          gil_checks_out(memory, layout, runtime, interp)) {
                        return runtime;
                      }
                      return std::nullopt;
                    });
}

std::optional<uint64_t> scan_for_debug_cookie(const ProcessMemory& memory,
                                              const std::vector<MemoryMapping>& mappings,
                                              const std::string& path) {
  uint64_t cookie = 0;
  std::memcpy(&cookie, "xdebugpy", 8);
  return scan_words(memory, mappings, path,
                    [&](uint64_t start, const std::vector<uint64_t>& words,
                        size_t i) -> std::optional<uint64_t> {
                      if (words[i] == cookie) return start + i * 8;
                      return std::nullopt;
                    });
}

}  // namespace stepscope::python
