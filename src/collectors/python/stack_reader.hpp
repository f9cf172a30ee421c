// Reading the Python stacks of every thread of a CPython process.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/process/memory.hpp"
#include "collectors/python/code_cache.hpp"
#include "collectors/python/layout.hpp"

namespace stepscope {

struct PythonFrame {
  // Views into the reader's cache: valid until the next sample.
  std::string_view function;  // co_qualname (3.11+) or co_name
  std::string_view file;
  int line = -1;  // -1 for an instruction that has no line
  // Equal for equal (code object, line) pairs as long as the process lives,
  // and never reused for another pair: callers may intern frames by it.
  uint64_t key = 0;
  // The first frame a call of the interpreter's evaluation loop ran (every
  // frame before 3.11, which calls the loop once per frame): a native stack
  // holds one evaluation-loop frame for each, which is where the native
  // sampler puts the Python frames.
  bool entry = false;
};

struct PythonThreadStack {
  int64_t native_tid = -1;         // the kernel's thread id, -1 when unknown
  uint64_t python_thread_id = 0;   // threading.get_ident()
  bool holds_gil = false;          // false too when the version does not tell
  std::vector<PythonFrame> frames;  // innermost first
  // How many of the outermost frames are those of the previous read at the
  // same position (the same thread state, the same validated code objects
  // at the same instructions), left in place: a caller may reuse what it
  // made of them. A loop keeps most of its stack from sample to sample.
  size_t same_outer_frames = 0;
  // All of them: the frames are exactly the previous read's.
  bool unchanged = false;
};

namespace python {

// Bounds on what is read from the target: real programs are far below them,
// so exceeding one means a torn read or a corrupt (or hostile) process.
inline constexpr size_t kMaxStackDepth = 1024;
inline constexpr size_t kMaxThreads = 4096;
inline constexpr size_t kMaxInterpreters = 256;
// The most bytes of a thread's data-stack chunk read in one go (3.11+).
inline constexpr size_t kMaxChunkRead = 256 * 1024;
// Reads again of a thread whose frame chain was torn at a generator (each a
// few system calls), until one is whole with the function that drives the
// generator on it: 0.2 to 1 % of such samples stay torn (bench/README.md).
inline constexpr int kMostTornRetries = 4;

// What the caller knows of the threads' scheduling: a thread that has not
// run since the previous read still has the stack that read found, which
// the reader then keeps instead of reading it again (most threads of a
// training job wait on a queue or a lock most of the time).
class ThreadActivity {
 public:
  // False only when the thread with this kernel id has certainly not run
  // since the reader's previous read began (asked before this read starts).
  virtual bool may_have_run(int64_t native_tid) = 0;

 protected:
  ~ThreadActivity() = default;
};

class StackReader {
 public:
  // `runtime` is the address of _PyRuntime; `code_type` that of PyCode_Type
  // (0 if unknown). `memory` and `layout` must outlive the reader.
  StackReader(const ProcessMemory& memory, const PythonLayout& layout, uint64_t runtime,
              uint64_t code_type);

  // Reads every thread of every interpreter into `out` (reusing its
  // storage). In the steady state this is one process_vm_readv (two when the
  // set of code objects changed): the structures are read at the addresses
  // the previous sample found, and used only if their pointers still agree.
  // False, with `error` saying what failed, when the memory could not be
  // read or does not make sense, as when the target changed it while we
  // read: the caller counts an error sample. Never throws for bad memory.
  // With `activity`, the stacks of threads it says have not run are kept
  // from the previous read (once their thread states are seen to point
  // where they did) rather than read again.
  bool read(std::vector<PythonThreadStack>& out, std::string& error, ThreadActivity* activity = nullptr);

  // Stacks kept without reading them, since the reader was made.
  uint64_t stacks_kept_still() const { return stacks_kept_still_; }
  // Stacks whose frame chain ended in a generator that had yielded
  // meanwhile (join_torn_generator), and those of them kept torn, since the
  // reader was made.
  uint64_t torn_stacks() const { return torn_stacks_; }
  uint64_t torn_stacks_unjoined() const { return torn_stacks_unjoined_; }
  // Whether the last read failed because the process has no memory left to
  // read (ESRCH: it is gone, or exiting and tearing its memory down).
  bool memory_gone() const { return memory_gone_; }

 private:
  // What a frame says before its code object is decoded.
  struct RawFrame {
    uint64_t code = 0;
    uint64_t instr = 0;   // 3.11+: the code unit pointer
    int lasti = -1;       // <= 3.10: the last instruction
    int lineno = 0;       // <= 3.10: the line when tracing set it, else 0
    bool generator = false;
    bool entry = true;    // see PythonFrame::entry; 3.11+ set it from the frame chain
  };
  struct Gil {
    int locked = 0;
    uint64_t holder = 0;
  };

  // Where one thread's structures were at a sample: the addresses the next
  // sample reads speculatively, all in one call (see read_planned).
  struct ThreadPlan {
    uint64_t tstate = 0;
    uint64_t interp = 0;
    uint64_t cframe = 0;          // 3.11: tstate->cframe
    uint64_t chunk = 0;           // 3.11+: tstate->datastack_chunk
    size_t chunk_end = 0;         // bytes of the chunk the frames occupied
    std::vector<uint64_t> loose;  // frames read outside the chunk, innermost first
    uint64_t top_frame = 0;       // the innermost frame, where the walk began
  };
  // The interpreter and thread lists as one sample walked them. Threads are
  // in list order, those of interps[0] first. Vectors only grow (`threads`
  // holds `thread_count` live entries) so that steady samples do not allocate.
  struct Plan {
    bool valid = false;
    std::vector<uint64_t> interps;
    std::vector<size_t> thread_counts;  // per interpreter
    std::vector<ThreadPlan> threads;
    size_t thread_count = 0;
    void clear() {
      valid = false;
      interps.clear();
      thread_counts.clear();
      thread_count = 0;
    }
    ThreadPlan& add_thread();
  };
  // The destinations of the speculative read, one per planned interpreter
  // and thread.
  struct InterpCopy {
    uint64_t next = 0;
    uint64_t threads = 0;
    Gil gil;
  };
  struct ThreadCopy {
    std::vector<char> state;      // thread_bytes_ of the thread state
    uint64_t current_frame = 0;   // 3.11: cframe->current_frame
    std::vector<char> chunk;      // the chunk's first bytes, page-rounded
    size_t chunk_size = 0;        // of `chunk`, which may be longer
    std::vector<char> loose;      // frame_bytes_ per planned loose frame
  };
  // How the frames of the thread being walked are found (reset per thread).
  struct Walk {
    uint64_t chunk_base = 0;
    const char* chunk = nullptr;  // a copy of [chunk_base, chunk_base + chunk_size)
    size_t chunk_size = 0;
    bool chunk_read = false;      // the chunk was read during this walk
    const ThreadPlan* plan = nullptr;  // frames read ahead (fast path only)
    const char* loose = nullptr;
    size_t loose_next = 0;        // planned loose frames before it are used or skipped
    bool fresh = false;           // something was read after the speculative call
    ThreadPlan* record = nullptr; // where this walk is noted for the next plan
  };

  bool read_stepwise(std::vector<PythonThreadStack>& out, std::string& error);
  bool read_planned(std::vector<PythonThreadStack>& out, std::string& error, ThreadActivity* activity);
  void build_planned_regions(const std::vector<PythonThreadStack>& out, ThreadActivity* activity);
  bool read_planned_thread(size_t index, uint64_t interp, const Gil& gil, ThreadPlan& plan, PythonThreadStack& out,
                           std::string& error);
  bool kept_from_last_read(size_t slot, uint64_t tstate, const std::vector<PythonThreadStack>& out) const;
  bool keep_still_thread(const char* state, const ThreadPlan& planned, uint64_t frame, const Gil& gil,
                         PythonThreadStack& out);
  bool interpreter_read_needed() const;
  void add_gil_regions(uint64_t base, Gil& gil);
  bool planned_lists_unchanged() const;
  bool read_thread(const char* state, uint64_t tstate, uint64_t interp, const Gil& gil,
                   uint64_t frame, size_t slot, PythonThreadStack& out, std::string& error);
  bool current_frame(const char* state, uint64_t tstate, uint64_t& cframe, uint64_t& frame,
                     std::string& error) const;
  bool walk_frames(uint64_t frame, size_t slot, uint64_t tstate, PythonThreadStack& out, std::string& error);
  bool ends_in_generator() const;
  void join_torn_generator(uint64_t tstate, size_t slot, PythonThreadStack& out);
  bool join_at_enclosing_function(std::vector<PythonFrame>& frames, bool anyway) const;
  bool reread_frames(uint64_t tstate, size_t slot, PythonThreadStack& out);
  template <typename Decode>
  bool walk_frame_chain(uint64_t frame, std::string& error, Decode decode);
  bool collect_frame_objects(uint64_t frame, std::string& error);
  bool collect_interpreter_frames(uint64_t frame, std::string& error);
  const char* frame_bytes_at(uint64_t frame);
  const char* chunk_frame(uint64_t frame);
  const char* loose_frame(uint64_t frame);
  bool resolve_frames(size_t slot, uint64_t tstate, PythonThreadStack& out, std::string& error);
  void remember_read(const std::vector<PythonThreadStack>& out);
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
  std::vector<char> chunk_buffer_;  // the chunk of the current thread, when read during the walk
  std::vector<RawFrame> raw_frames_;
  std::vector<uint64_t> code_addresses_;
  std::vector<const CodeInfo*> code_infos_;
  std::vector<ProcessMemory::Region> regions_;
  // The speculative path: what the last good sample walked (plan_), what
  // this one walks (observed_), and the copies read at plan_'s addresses.
  Plan plan_;
  Plan observed_;
  uint64_t planned_head_ = 0;
  Gil planned_runtime_gil_;
  bool interp_read_ = true;  // whether this speculative read includes the interpreters' lists
  std::vector<InterpCopy> interp_copies_;
  std::vector<ThreadCopy> thread_copies_;
  // Per planned thread: it has not run since the last read (see ThreadActivity).
  std::vector<uint8_t> still_;
  uint64_t stacks_kept_still_ = 0;
  uint64_t torn_stacks_ = 0;
  uint64_t torn_stacks_unjoined_ = 0;
  std::vector<char> reread_state_;  // a thread state read again (the caller's copy is still in use)
  std::vector<PythonFrame> torn_frames_;
  bool memory_gone_ = false;
  Walk walk_;
  // What each position of the last read's output held, to tell an
  // stack's unchanged frames (PythonThreadStack::same_outer_frames): its thread state and,
  // per raw frame, the code object's cache id and the instruction.
  struct FrameSignature {
    uint32_t code_id = 0;
    int lasti = 0;
    int lineno = 0;
    uint64_t instr = 0;
    bool entry = false;
    bool operator==(const FrameSignature&) const = default;
  };
  struct SlotSignature {
    uint64_t tstate = 0;
    std::vector<FrameSignature> frames;
    uint64_t code_generation = 0;  // of the code cache whose entries its frames view
  };
  std::vector<SlotSignature> slots_;
  const SlotSignature* last_read_of(size_t slot, uint64_t tstate) const;
  static size_t same_outer_frames(const std::vector<FrameSignature>& last,
                                  const std::vector<FrameSignature>& now);
  std::vector<FrameSignature> signature_;  // the thread being resolved
  std::vector<PythonFrame> inner_frames_;  // its frames that changed
  // The output vector as the last read left it: another vector, or one the
  // caller changed (cleared after an error), has no previous frames to keep.
  const PythonThreadStack* last_out_ = nullptr;
  size_t last_out_size_ = 0;
  bool out_intact_ = false;  // for the read under way
};

}  // namespace python
}  // namespace stepscope
