#include "collectors/python/debug_offsets.hpp"

#include <cstring>
#include <cerrno>
#include <iterator>

#include <fmt/format.h>

#include "collectors/python/offsets_generated.hpp"
#include "collectors/python/version.hpp"

namespace stepscope::python {

namespace {

// The 3.13 shape of _Py_DebugOffsets (Include/internal/pycore_runtime.h):
// every member is a uint64_t, so the struct has no padding and this mirror
// matches it byte for byte. It describes the published format, not CPython's
// private structs. 3.14 added members in the middle of several groups, so a
// new minor version adds its own mirror here.
struct DebugOffsets313 {
  char cookie[8];
  uint64_t version;
  uint64_t free_threaded;
  struct {
    uint64_t size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
        datastack_chunk, status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  struct {
    uint64_t size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } tuple_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } list_object;
  struct {
    uint64_t size, ma_keys, ma_values;
  } dict_object;
  struct {
    uint64_t size, ob_fval;
  } float_object;
  struct {
    uint64_t size, lv_tag, ob_digit;
  } long_object;
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
  struct {
    uint64_t size, collecting;
  } gc;
};

constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

// A published offset narrowed to the layout's type; a value no struct could
// have means the struct we read is not what we think it is.
bool narrow(uint64_t value, uint32_t& out) {
  if (value > (1u << 20)) return false;
  out = static_cast<uint32_t>(value);
  return true;
}

bool fill_from_313(const DebugOffsets313& d, PythonLayout& layout) {
  // What _Py_DebugOffsets does not publish has not changed since 3.12: the
  // frame owner codes, the unicode state bits and the size of the compact
  // unicode header beyond the ASCII one. Take them from the newest table
  // generated from real headers rather than typing them here.
  const PythonLayout& newest = *kGeneratedLayouts[std::size(kGeneratedLayouts) - 1];
  layout.interpreter_frame.owned_by_generator = newest.interpreter_frame.owned_by_generator;
  layout.interpreter_frame.owned_by_cstack = newest.interpreter_frame.owned_by_cstack;
  layout.unicode = newest.unicode;
  layout.frame_model = FrameModel::kCurrentFrame;
  layout.line_table = LineTableFormat::kLocations311;
  layout.gil.scope = GilScope::kInterpreter;
  const uint32_t compact_extra = newest.unicode.compact_size - newest.unicode.ascii_size;
  bool ok = narrow(d.runtime_state.interpreters_head, layout.runtime.interpreters_head) &&
            narrow(d.interpreter_state.next, layout.interpreter.next) &&
            narrow(d.interpreter_state.threads_head, layout.interpreter.threads_head) &&
            narrow(d.interpreter_state.gil_runtime_state_locked, layout.gil.locked) &&
            narrow(d.interpreter_state.gil_runtime_state_holder, layout.gil.last_holder) &&
            narrow(d.thread_state.prev, layout.thread.prev) &&
            narrow(d.thread_state.next, layout.thread.next) &&
            narrow(d.thread_state.interp, layout.thread.interp) &&
            narrow(d.thread_state.current_frame, layout.thread.frame) &&
            narrow(d.thread_state.thread_id, layout.thread.thread_id) &&
            narrow(d.thread_state.native_thread_id, layout.thread.native_thread_id) &&
            narrow(d.thread_state.datastack_chunk, layout.thread.datastack_chunk) &&
            narrow(d.interpreter_frame.size, layout.interpreter_frame.size) &&
            narrow(d.interpreter_frame.executable, layout.interpreter_frame.code) &&
            narrow(d.interpreter_frame.previous, layout.interpreter_frame.previous) &&
            narrow(d.interpreter_frame.instr_ptr, layout.interpreter_frame.instr) &&
            narrow(d.interpreter_frame.owner, layout.interpreter_frame.owner) &&
            narrow(d.pyobject.ob_type, layout.object.type) &&
            narrow(d.code_object.filename, layout.code.filename) &&
            narrow(d.code_object.name, layout.code.name) &&
            narrow(d.code_object.qualname, layout.code.qualname) &&
            narrow(d.code_object.firstlineno, layout.code.firstlineno) &&
            narrow(d.code_object.linetable, layout.code.linetable) &&
            narrow(d.code_object.co_code_adaptive, layout.code.code_adaptive) &&
            narrow(d.unicode_object.length, layout.unicode.length) &&
            narrow(d.unicode_object.state, layout.unicode.state) &&
            narrow(d.unicode_object.asciiobject_size, layout.unicode.ascii_size) &&
            narrow(d.bytes_object.ob_size, layout.bytes.ob_size) &&
            narrow(d.bytes_object.ob_sval, layout.bytes.ob_sval);
  layout.unicode.compact_size = layout.unicode.ascii_size + compact_extra;
  return ok;
}

}  // namespace

std::optional<PythonLayout> layout_from_debug_offsets(const ProcessMemory& memory,
                                                      uint64_t runtime_address,
                                                      std::string* error) {
  auto fail = [&](std::string message) -> std::optional<PythonLayout> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  DebugOffsets313 offsets;
  if (!memory.read_value(runtime_address, offsets)) {
    return fail(fmt::format("cannot read _Py_DebugOffsets at 0x{:x}: {}", runtime_address,
                            std::strerror(errno)));
  }
  if (std::memcmp(offsets.cookie, kCookie, sizeof kCookie) != 0) {
    return fail(fmt::format("no _Py_DebugOffsets cookie at 0x{:x}", runtime_address));
  }
  PythonVersion version = version_from_hex(offsets.version);
  if (version.major != 3 || version.minor != 13) {
    return fail(fmt::format(
        "_Py_DebugOffsets of Python {} has a format stepscope does not know yet (it reads 3.13's)",
        version.text));
  }
  if (offsets.free_threaded != 0) {
    return fail("free-threaded CPython builds (3.13t) are not supported yet");
  }
  PythonLayout layout;
  layout.major = version.major;
  layout.minor = version.minor;
  if (!fill_from_313(offsets, layout)) {
    return fail(fmt::format("_Py_DebugOffsets at 0x{:x} holds implausible offsets", runtime_address));
  }
  return layout;
}

}  // namespace stepscope::python
