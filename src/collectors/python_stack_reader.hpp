// Reading the Python stacks of every thread of a CPython process.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/process_memory.hpp"
#include "collectors/python_code_cache.hpp"
#include "collectors/python_layout.hpp"

namespace stepscope {

struct PythonFrame {
  // Views into the reader's cache: valid until the next sample.
  std::string_view function;  // co_qualname (3.11+) or co_name
  std::string_view file;
  int line = -1;  // -1 for an instruction that has no line
  // Equal for equal (code object, line) pairs as long as the process lives,
  // and never reused for another pair: callers may intern frames by it.
  uint64_t key = 0;
};

struct PythonThreadStack {
  int64_t native_tid = -1;         // the kernel's thread id, -1 when unknown
  uint64_t python_thread_id = 0;   // threading.get_ident()
  bool holds_gil = false;          // false too when the version does not tell
  std::vector<PythonFrame> frames;  // innermost first
};

namespace python {

// Bounds on what is read from the target: real programs are far below them,
// so exceeding one means a torn read or a corrupt (or hostile) process.
inline constexpr size_t kMaxStackDepth = 1024;
inline constexpr size_t kMaxThreads = 4096;
inline constexpr size_t kMaxInterpreters = 256;
// The most bytes of a thread's data-stack chunk read in one go (3.11+).
inline constexpr size_t kMaxChunkRead = 256 * 1024;

class StackReader {
 public:
  // `runtime` is the address of _PyRuntime; `code_type` that of PyCode_Type
  // (0 if unknown). `memory` and `layout` must outlive the reader.
  StackReader(const ProcessMemory& memory, const PythonLayout& layout, uint64_t runtime,
              uint64_t code_type);

  // Reads every thread of every interpreter into `out` (reusing its
  // storage). False, with `error` saying what failed, when the memory could
  // not be read or does not make sense, as when the target changed it while
  // we read: the caller counts an error sample. Never throws for bad memory.
  bool read(std::vector<PythonThreadStack>& out, std::string& error);

 private:
  // What a frame says before its code object is decoded.
  struct RawFrame {
    uint64_t code = 0;
    uint64_t instr = 0;   // 3.11+: the code unit pointer
    int lasti = -1;       // <= 3.10: the last instruction
    int lineno = 0;       // <= 3.10: the line when tracing set it, else 0
    bool generator = false;
  };
  struct Gil {
    int locked = 0;
    uint64_t holder = 0;
  };

  bool read_thread(uint64_t tstate, uint64_t interp, const Gil& gil, PythonThreadStack& out,
                   uint64_t& next, std::string& error);
  bool collect_frame_objects(uint64_t frame, std::string& error);
  bool collect_interpreter_frames(uint64_t frame, std::string& error);
  const char* interpreter_frame_bytes(uint64_t frame);
  bool resolve_frames(std::vector<PythonFrame>& out, std::string& error);
  int line_of(const RawFrame& raw, const python::CodeInfo& code) const;
  bool incomplete(const RawFrame& raw, const python::CodeInfo& code) const;

  const ProcessMemory& memory_;
  const PythonLayout& layout_;
  uint64_t runtime_;
  CodeCache codes_;
  uint32_t thread_bytes_;  // how much of PyThreadState to read
  uint32_t frame_bytes_;   // how much of a frame to read
  // Buffers reused from sample to sample.
  std::vector<char> thread_buffer_;
  std::vector<char> frame_buffer_;
  std::vector<char> chunk_buffer_;  // [chunk_base_, chunk_base_ + size) of the current thread
  uint64_t chunk_base_ = 0;
  bool chunk_tried_ = false;
  std::vector<RawFrame> raw_frames_;
  std::vector<uint64_t> code_addresses_;
  std::vector<const CodeInfo*> code_infos_;
};

}  // namespace python
}  // namespace stepscope
