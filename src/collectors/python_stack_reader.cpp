#include "collectors/python_stack_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace stepscope::python {

namespace {

// The end of the furthest of `offsets` (each a field of `width` bytes).
uint32_t span_of(std::initializer_list<uint32_t> offsets, uint32_t width = 8) {
  uint32_t end = 0;
  for (uint32_t offset : offsets) {
    if (offset != kAbsent) end = std::max(end, offset + width);
  }
  return end;
}

template <class T>
T field(const char* base, uint32_t offset) {
  T value{};
  if (offset != kAbsent) std::memcpy(&value, base + offset, sizeof value);
  return value;
}

// Brent's cycle detection over a chain of addresses: O(1) memory, and it
// notices a loop within twice its length.
class CycleGuard {
 public:
  bool seen(uint64_t address) {
    if (address == checkpoint_) return true;
    if (++steps_ == power_) {
      checkpoint_ = address;
      power_ *= 2;
      steps_ = 0;
    }
    return false;
  }

 private:
  uint64_t checkpoint_ = 0;
  size_t power_ = 1;
  size_t steps_ = 0;
};

}  // namespace

StackReader::StackReader(const ProcessMemory& memory, const PythonLayout& layout, uint64_t runtime,
                         uint64_t code_type)
    : memory_(memory), layout_(layout), runtime_(runtime), codes_(memory, layout, code_type) {
  const auto& t = layout.thread;
  thread_bytes_ = span_of({t.next, t.interp, t.frame, t.thread_id, t.native_thread_id,
                           t.datastack_chunk});
  if (layout.frame_model == FrameModel::kFrameObjects) {
    const auto& f = layout.frame_object;
    frame_bytes_ = span_of({f.back, f.code, f.lasti, f.lineno, f.trace});
  } else {
    const auto& f = layout.interpreter_frame;
    frame_bytes_ = span_of({f.code, f.previous, f.instr, f.owner});
  }
  thread_buffer_.resize(thread_bytes_);
  frame_buffer_.resize(frame_bytes_);
}

bool StackReader::read(std::vector<PythonThreadStack>& out, std::string& error) {
  codes_.begin_sample();
  uint64_t interp = 0;
  Gil runtime_gil;
  std::vector<ProcessMemory::Region> regions{{runtime_ + layout_.runtime.interpreters_head, &interp, 8}};
  if (layout_.gil.scope == GilScope::kRuntime) {
    regions.push_back({runtime_ + layout_.gil.locked, &runtime_gil.locked, 4});
    regions.push_back({runtime_ + layout_.gil.last_holder, &runtime_gil.holder, 8});
  }
  if (!memory_.read_many(regions)) {
    error = fmt::format("cannot read _PyRuntime: {}", std::strerror(errno));
    return false;
  }
  size_t count = 0;
  for (size_t interpreters = 0; interp != 0; ++interpreters) {
    if (interpreters == kMaxInterpreters) {
      error = "the interpreter list is cyclic or implausibly long";
      return false;
    }
    uint64_t next_interp = 0, tstate = 0;
    Gil gil = runtime_gil;
    regions = {{interp + layout_.interpreter.next, &next_interp, 8},
               {interp + layout_.interpreter.threads_head, &tstate, 8}};
    if (layout_.gil.scope == GilScope::kInterpreter) {
      regions.push_back({interp + layout_.gil.locked, &gil.locked, 4});
      regions.push_back({interp + layout_.gil.last_holder, &gil.holder, 8});
    }
    if (!memory_.read_many(regions)) {
      error = fmt::format("cannot read the interpreter state at 0x{:x}", interp);
      return false;
    }
    CycleGuard cycle;
    while (tstate != 0) {
      if (count == kMaxThreads || cycle.seen(tstate)) {
        error = "the thread list is cyclic or implausibly long";
        return false;
      }
      if (out.size() <= count) out.emplace_back();
      if (!read_thread(tstate, interp, gil, out[count], tstate, error)) return false;
      ++count;
    }
    interp = next_interp;
  }
  out.resize(count);
  return true;
}

bool StackReader::read_thread(uint64_t tstate, uint64_t interp, const Gil& gil,
                              PythonThreadStack& out, uint64_t& next, std::string& error) {
  const char* t = thread_buffer_.data();
  if (!memory_.read(tstate, thread_buffer_.data(), thread_bytes_)) {
    error = fmt::format("cannot read the thread state at 0x{:x}", tstate);
    return false;
  }
  if (field<uint64_t>(t, layout_.thread.interp) != interp) {
    error = fmt::format("the thread state at 0x{:x} belongs to another interpreter", tstate);
    return false;  // freed and reused while we walked the list
  }
  next = field<uint64_t>(t, layout_.thread.next);
  out.python_thread_id = field<uint64_t>(t, layout_.thread.thread_id);
  out.native_tid = layout_.thread.native_thread_id == kAbsent
                       ? -1
                       : static_cast<int64_t>(field<uint64_t>(t, layout_.thread.native_thread_id));
  out.holds_gil = gil.locked != 0 && gil.holder == tstate;
  uint64_t frame = field<uint64_t>(t, layout_.thread.frame);
  raw_frames_.clear();
  bool ok = true;
  switch (layout_.frame_model) {
    case FrameModel::kFrameObjects:
      ok = collect_frame_objects(frame, error);
      break;
    case FrameModel::kCFrame:
      // tstate->cframe points to a struct on the thread's C stack.
      if (frame != 0 && !memory_.read_value(frame + layout_.cframe.current_frame, frame)) {
        error = fmt::format("cannot read the C frame of thread state 0x{:x}", tstate);
        return false;
      }
      [[fallthrough]];
    case FrameModel::kCurrentFrame:
      chunk_base_ = field<uint64_t>(t, layout_.thread.datastack_chunk);
      chunk_tried_ = false;
      ok = collect_interpreter_frames(frame, error);
      break;
  }
  return ok && resolve_frames(out.frames, error);
}

bool StackReader::collect_frame_objects(uint64_t frame, std::string& error) {
  const auto& f = layout_.frame_object;
  CycleGuard cycle;
  for (; frame != 0; frame = field<uint64_t>(frame_buffer_.data(), f.back)) {
    if (raw_frames_.size() == kMaxStackDepth || cycle.seen(frame)) {
      error = "the frame chain is cyclic or deeper than 1024";
      return false;
    }
    if (!memory_.read(frame, frame_buffer_.data(), frame_bytes_)) {
      error = fmt::format("cannot read the frame at 0x{:x}", frame);
      return false;
    }
    const char* bytes = frame_buffer_.data();
    RawFrame raw;
    raw.code = field<uint64_t>(bytes, f.code);
    raw.lasti = field<int>(bytes, f.lasti);
    // PyFrame_GetLineNumber: 3.10 trusts f_lineno whenever it is non-zero,
    // 3.8-3.9 only while the frame is traced.
    const bool lineno_valid = layout_.minor >= 10 || field<uint64_t>(bytes, f.trace) != 0;
    raw.lineno = lineno_valid ? field<int>(bytes, f.lineno) : 0;
    raw_frames_.push_back(raw);
  }
  return true;
}

// Frames of 3.11+ live in the thread's data-stack chunk, one after another.
// The first frame found inside the chunk is read together with everything
// below it in one call; its callers are then resolved from that copy.
// Frames elsewhere (generators, coroutines, older chunks) are read one by one.
const char* StackReader::interpreter_frame_bytes(uint64_t frame) {
  const bool in_chunk_range = chunk_base_ != 0 && frame >= chunk_base_ &&
                              frame - chunk_base_ <= kMaxChunkRead - frame_bytes_;
  if (in_chunk_range && !chunk_tried_) {
    chunk_tried_ = true;
    chunk_buffer_.resize(frame - chunk_base_ + frame_bytes_);
    if (!memory_.read(chunk_base_, chunk_buffer_.data(), chunk_buffer_.size())) {
      chunk_buffer_.clear();
    }
  }
  if (in_chunk_range && frame - chunk_base_ + frame_bytes_ <= chunk_buffer_.size()) {
    return chunk_buffer_.data() + (frame - chunk_base_);
  }
  if (!memory_.read(frame, frame_buffer_.data(), frame_bytes_)) return nullptr;
  return frame_buffer_.data();
}

bool StackReader::collect_interpreter_frames(uint64_t frame, std::string& error) {
  const auto& f = layout_.interpreter_frame;
  CycleGuard cycle;
  while (frame != 0) {
    if (raw_frames_.size() == kMaxStackDepth || cycle.seen(frame)) {
      error = "the frame chain is cyclic or deeper than 1024";
      return false;
    }
    const char* bytes = interpreter_frame_bytes(frame);
    if (bytes == nullptr) {
      error = fmt::format("cannot read the frame at 0x{:x}", frame);
      return false;
    }
    const int owner = field<char>(bytes, f.owner);
    // Shim frames owned by the C stack (3.12+) run no Python code.
    if (owner != f.owned_by_cstack) {
      RawFrame raw;
      raw.code = field<uint64_t>(bytes, f.code);
      raw.instr = field<uint64_t>(bytes, f.instr);
      raw.generator = owner == f.owned_by_generator;
      raw_frames_.push_back(raw);
    }
    frame = field<uint64_t>(bytes, f.previous);
  }
  return true;
}

bool StackReader::resolve_frames(std::vector<PythonFrame>& out, std::string& error) {
  code_addresses_.clear();
  for (const RawFrame& raw : raw_frames_) code_addresses_.push_back(raw.code);
  if (!codes_.lookup(code_addresses_, code_infos_, error)) return false;
  out.clear();
  for (size_t i = 0; i < raw_frames_.size(); ++i) {
    const CodeInfo& code = *code_infos_[i];
    if (incomplete(raw_frames_[i], code)) continue;
    const int line = line_of(raw_frames_[i], code);
    const uint64_t key = (static_cast<uint64_t>(code.id) << 32) | static_cast<uint32_t>(line);
    out.push_back({code.function, code.file, line, key});
  }
  return true;
}

int StackReader::line_of(const RawFrame& raw, const CodeInfo& code) const {
  if (layout_.frame_model == FrameModel::kFrameObjects) {
    if (raw.lineno != 0) return raw.lineno;
    const int64_t offset = layout_.frame_object.lasti_in_code_units ? 2LL * raw.lasti : raw.lasti;
    return code.lines.line_at(static_cast<int>(std::clamp<int64_t>(offset, -1, INT32_MAX)));
  }
  // The interpreter's own rule (_PyInterpreterFrame_LASTI): the byte offset
  // of the instruction pointer from the start of the code.
  const int64_t offset = static_cast<int64_t>(raw.instr - (raw.code + layout_.code.code_adaptive));
  return code.lines.line_at(static_cast<int>(std::clamp<int64_t>(offset, -1, INT32_MAX)));
}

// A frame whose prologue (copying free variables, making cells) has not
// finished yet: the interpreter itself hides it (_PyFrame_IsIncomplete).
bool StackReader::incomplete(const RawFrame& raw, const CodeInfo& code) const {
  if (layout_.frame_model == FrameModel::kFrameObjects || layout_.code.firsttraceable == kAbsent ||
      raw.generator) {
    return false;
  }
  const int64_t offset = static_cast<int64_t>(raw.instr - (raw.code + layout_.code.code_adaptive));
  return offset < 2LL * code.first_traceable;
}

}  // namespace stepscope::python
