// Where CPython keeps what a stack reader needs, for one minor version.
//
// For 3.8 to 3.12 the values come from python/offsets_generated.hpp, which
// tools/gen_python_offsets.py computes by compiling offsetof probes against
// each version's real headers. For 3.13 and later they are read out of the
// target's own _Py_DebugOffsets (python/debug_offsets.hpp). No offset is
// typed by hand anywhere else.
#pragma once

#include <cstdint>

namespace stepscope::python {

// A field this version does not have.
inline constexpr uint32_t kAbsent = UINT32_MAX;

// How a thread's frames are chained.
enum class FrameModel : uint8_t {
  kFrameObjects,  // <= 3.10: tstate->frame, PyFrameObject linked by f_back
  kCFrame,        // 3.11-3.12: tstate->cframe->current_frame, _PyInterpreterFrame chain
  kCurrentFrame,  // 3.13+: tstate->current_frame, _PyInterpreterFrame chain
};

// The encoding of a code object's instruction-to-line table.
enum class LineTableFormat : uint8_t {
  kLnotab,        // 3.8-3.9: co_lnotab, (byte increment, signed line increment) pairs
  kLinetable310,  // 3.10: co_linetable, PEP 626 (byte delta, line delta or -128) pairs
  kLocations311,  // 3.11+: co_linetable, the varint location table
};

// Which struct the GIL state is a member of.
enum class GilScope : uint8_t {
  kNone,         // not known for this version
  kRuntime,      // <= 3.11: _PyRuntime.ceval.gil
  kInterpreter,  // 3.12+: PyInterpreterState._gil
};

struct PythonLayout {
  int major = 0;
  int minor = 0;
  FrameModel frame_model = FrameModel::kFrameObjects;
  LineTableFormat line_table = LineTableFormat::kLnotab;

  struct Runtime {
    uint32_t interpreters_head = kAbsent;
    uint32_t interpreters_main = kAbsent;  // only used to validate a scanned _PyRuntime
  } runtime;

  struct Interpreter {
    uint32_t next = kAbsent;
    uint32_t runtime = kAbsent;  // 3.9+: back to _PyRuntime; validates a scanned one
    uint32_t threads_head = kAbsent;
  } interpreter;

  // Offsets of the GIL's fields from the start of the struct `scope` names.
  struct Gil {
    GilScope scope = GilScope::kNone;
    uint32_t locked = kAbsent;       // int: 1 while some thread holds it
    uint32_t last_holder = kAbsent;  // PyThreadState*: the holder while locked
  } gil;

  struct Thread {
    // PyThreadState*: threads are added at the head of the list, so the
    // first thread's prev is null until another thread is added before it.
    uint32_t prev = kAbsent;
    uint32_t next = kAbsent;
    uint32_t interp = kAbsent;
    uint32_t frame = kAbsent;  // PyFrameObject* / _PyCFrame* / _PyInterpreterFrame*
    uint32_t thread_id = kAbsent;         // unsigned long: pthread_self()
    uint32_t native_thread_id = kAbsent;  // unsigned long: the kernel tid (3.11+)
    uint32_t datastack_chunk = kAbsent;   // _PyStackChunk*: where most frames live (3.11+)
  } thread;

  struct CFrame {
    uint32_t current_frame = kAbsent;
  } cframe;

  // _PyInterpreterFrame (3.11+).
  struct InterpreterFrame {
    uint32_t size = kAbsent;  // sizeof, without the locals
    uint32_t code = kAbsent;  // f_code / f_executable
    uint32_t previous = kAbsent;
    uint32_t instr = kAbsent;  // prev_instr / instr_ptr: code unit pointer
    uint32_t owner = kAbsent;  // char
    // 3.11: bool, set on the first frame each call of the evaluation loop
    // runs (3.12+ mark that call with a shim frame owned by the C stack).
    uint32_t is_entry = kAbsent;
    int owned_by_generator = -1;
    int owned_by_cstack = -1;  // 3.12+: shim frames that hold no Python code
  } interpreter_frame;

  // PyFrameObject (<= 3.10).
  struct FrameObject {
    uint32_t back = kAbsent;
    uint32_t code = kAbsent;
    uint32_t lasti = kAbsent;   // int
    uint32_t lineno = kAbsent;  // int
    uint32_t trace = kAbsent;   // PyObject*
    bool lasti_in_code_units = false;  // 3.10 counts instructions, not bytes
  } frame_object;

  struct Object {
    uint32_t type = kAbsent;  // ob_type
  } object;

  struct Code {
    uint32_t filename = kAbsent;
    uint32_t name = kAbsent;
    uint32_t qualname = kAbsent;     // 3.11+
    uint32_t firstlineno = kAbsent;  // int
    uint32_t flags = kAbsent;        // int, co_flags (3.13's debug offsets lack it)
    uint32_t linetable = kAbsent;    // co_lnotab / co_linetable (bytes)
    uint32_t code_adaptive = kAbsent;   // 3.11+: the instructions, inline
    uint32_t firsttraceable = kAbsent;  // 3.11+: int, index of the first traceable instruction
  } code;

  // PyASCIIObject and PyCompactUnicodeObject; `state` is a bit field whose
  // layout the generator measures rather than assumes.
  struct Unicode {
    uint32_t length = kAbsent;  // Py_ssize_t, in code points
    uint32_t state = kAbsent;   // uint32_t of bit fields
    uint32_t ascii_size = kAbsent;    // data of compact ASCII strings starts here
    uint32_t compact_size = kAbsent;  // data of other compact strings starts here
    uint32_t kind_mask = 0;     // kind: 1, 2 or 4 bytes per code point
    uint32_t compact_mask = 0;
    uint32_t ascii_mask = 0;
  } unicode;

  struct Bytes {
    uint32_t ob_size = kAbsent;
    uint32_t ob_sval = kAbsent;
  } bytes;
};

}  // namespace stepscope::python
