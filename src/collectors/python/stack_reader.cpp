#include "collectors/python/stack_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

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
  thread_bytes_ = span_of({t.prev, t.next, t.interp, t.frame, t.thread_id, t.native_thread_id,
                           t.datastack_chunk});
  if (layout.frame_model == FrameModel::kFrameObjects) {
    const auto& f = layout.frame_object;
    frame_bytes_ = span_of({f.back, f.code, f.lasti, f.lineno, f.trace});
  } else {
    const auto& f = layout.interpreter_frame;
    frame_bytes_ = span_of({f.code, f.previous, f.instr, f.owner, f.is_entry});
  }
  thread_buffer_.resize(thread_bytes_);
  frame_buffer_.resize(frame_bytes_);
}

// Most bytes of a plan's speculative read: beyond it (thousands of loose
// frames or threads) the step-by-step path is used, as the batch would take
// several calls anyway.
constexpr size_t kMaxPlannedRegions = 1024;
// The chunk copy is rounded up to this boundary: the page that held the
// deepest frame last time is mapped, so the extra bytes are free headroom for
// a stack that grew a little, and cannot make the read fault.
constexpr uint64_t kPage = 4096;

StackReader::ThreadPlan& StackReader::Plan::add_thread() {
  if (thread_count == threads.size()) threads.emplace_back();
  ThreadPlan& plan = threads[thread_count++];
  plan.tstate = plan.interp = plan.cframe = plan.chunk = 0;
  plan.chunk_end = 0;
  plan.loose.clear();  // keeps its capacity

  return plan;
}

bool StackReader::read(std::vector<PythonThreadStack>& out, std::string& error, ThreadActivity* activity) {
  codes_.begin_sample();
  memory_gone_ = false;
  out_intact_ = out.data() == last_out_ && out.size() == last_out_size_;
  bool ok = plan_.valid && read_planned(out, error, activity);
  if (!ok) {
    // The lists or a pointer changed since the last sample (or nothing was
    // planned yet): walk them step by step, each pointer read before what
    // it points to, with no copy taken ahead.
    codes_.set_prefetched(false);
    ok = read_stepwise(out, error);
  }
  if (!ok) {
    plan_.valid = false;
    last_out_ = nullptr;  // the caller drops a failed read's output
    return false;
  }
  remember_read(out);
  // What this sample walked is where the next one looks first.
  std::swap(plan_, observed_);
  size_t regions = 1 + 4 * plan_.interps.size();
  for (size_t t = 0; t < plan_.thread_count; ++t) regions += 3 + plan_.threads[t].loose.size();
  plan_.valid = regions <= kMaxPlannedRegions;
  return true;
}

// The GIL's two fields in address order, so that read_many can join them
// with each other and their neighbours into one range.
void StackReader::add_gil_regions(uint64_t base, Gil& gil) {
  ProcessMemory::Region locked{base + layout_.gil.locked, &gil.locked, 4};
  ProcessMemory::Region holder{base + layout_.gil.last_holder, &gil.holder, 8};
  if (holder.addr < locked.addr) std::swap(locked, holder);
  regions_.push_back(locked);
  regions_.push_back(holder);
}

// The step-by-step walk: _PyRuntime, then each interpreter, then each of its
// thread states, each read at the address the previous read gave.
bool StackReader::read_stepwise(std::vector<PythonThreadStack>& out, std::string& error) {
  observed_.clear();
  uint64_t interp = 0;
  Gil runtime_gil;
  regions_.assign({{runtime_ + layout_.runtime.interpreters_head, &interp, 8}});
  if (layout_.gil.scope == GilScope::kRuntime) {
    add_gil_regions(runtime_, runtime_gil);
  }
  if (!memory_.read_many(regions_)) {
    memory_gone_ = errno == ESRCH;
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
    regions_.assign({{interp + layout_.interpreter.next, &next_interp, 8},
                     {interp + layout_.interpreter.threads_head, &tstate, 8}});
    if (layout_.gil.scope == GilScope::kInterpreter) {
      add_gil_regions(interp, gil);
    }
    if (!memory_.read_many(regions_)) {
      error = fmt::format("cannot read the interpreter state at 0x{:x}", interp);
      return false;
    }
    observed_.interps.push_back(interp);
    observed_.thread_counts.push_back(0);
    CycleGuard cycle;
    while (tstate != 0) {
      if (count == kMaxThreads || cycle.seen(tstate)) {
        error = "the thread list is cyclic or implausibly long";
        return false;
      }
      const char* state = thread_buffer_.data();
      if (!memory_.read(tstate, thread_buffer_.data(), thread_bytes_)) {
        error = fmt::format("cannot read the thread state at 0x{:x}", tstate);
        return false;
      }
      ThreadPlan& plan = observed_.add_thread();
      ++observed_.thread_counts.back();
      plan.tstate = tstate;
      plan.interp = interp;
      uint64_t frame = 0;
      if (!current_frame(state, tstate, plan.cframe, frame, error)) return false;
      if (layout_.frame_model != FrameModel::kFrameObjects) {
        plan.chunk = field<uint64_t>(state, layout_.thread.datastack_chunk);
      }
      walk_ = Walk{.chunk_base = plan.chunk, .record = &plan};
      if (out.size() <= count) out.emplace_back();
      if (!read_thread(state, tstate, interp, gil, frame, count, out[count], error)) return false;
      ++count;
      tstate = field<uint64_t>(state, layout_.thread.next);
    }
    interp = next_interp;
  }
  out.resize(count);
  return true;
}

// One region per structure of the plan, in the order the step-by-step walk
// reads them (runtime, interpreters, then per thread: its state, C frame,
// chunk, loose frames), so that within the call every pointer is still read
// before what it points to. The code objects' headers come last.
void StackReader::build_planned_regions(const std::vector<PythonThreadStack>& out, ThreadActivity* activity) {
  regions_.clear();
  regions_.push_back({runtime_ + layout_.runtime.interpreters_head, &planned_head_, 8});
  if (layout_.gil.scope == GilScope::kRuntime) {
    add_gil_regions(runtime_, planned_runtime_gil_);
  }
  interp_copies_.resize(plan_.interps.size());
  interp_read_ = interpreter_read_needed();
  for (size_t i = 0; i < plan_.interps.size(); ++i) {
    const uint64_t interp = plan_.interps[i];
    InterpCopy& copy = interp_copies_[i];
    if (interp_read_) {
      regions_.push_back({interp + layout_.interpreter.next, &copy.next, 8});
      regions_.push_back({interp + layout_.interpreter.threads_head, &copy.threads, 8});
    }
    if (layout_.gil.scope == GilScope::kInterpreter) {
      add_gil_regions(interp, copy.gil);
    }
  }
  if (thread_copies_.size() < plan_.thread_count) thread_copies_.resize(plan_.thread_count);
  still_.assign(plan_.thread_count, 0);
  for (size_t t = 0; t < plan_.thread_count; ++t) {
    const ThreadPlan& plan = plan_.threads[t];
    ThreadCopy& copy = thread_copies_[t];
    // Asked before the read: the thread state still tells whether the
    // answer is about this thread and the frames the last read found.
    still_[t] = activity != nullptr && kept_from_last_read(t, plan.tstate, out) &&
                !activity->may_have_run(out[t].native_tid);
    copy.state.resize(thread_bytes_);
    regions_.push_back({plan.tstate, copy.state.data(), thread_bytes_});
    if (layout_.frame_model == FrameModel::kCFrame && plan.cframe != 0) {
      regions_.push_back({plan.cframe + layout_.cframe.current_frame, &copy.current_frame, 8});
    }
    copy.chunk_size = 0;
    copy.loose.clear();
    if (still_[t]) continue;  // its frames are not read
    if (plan.chunk != 0 && plan.chunk_end != 0) {
      const uint64_t end = (plan.chunk + plan.chunk_end + kPage - 1) & ~(kPage - 1);
      copy.chunk_size = std::min<uint64_t>(end - plan.chunk, kMaxChunkRead);
      // Grown, never shrunk: resizing down and up again would zero the
      // bytes the read is about to overwrite (a memset per sample).
      if (copy.chunk.size() < copy.chunk_size) copy.chunk.resize(copy.chunk_size);
      regions_.push_back({plan.chunk, copy.chunk.data(), copy.chunk_size});
    }
    copy.loose.resize(plan.loose.size() * frame_bytes_);
    for (size_t i = 0; i < plan.loose.size(); ++i) {
      regions_.push_back({plan.loose[i], copy.loose.data() + i * frame_bytes_, frame_bytes_});
    }
  }
}

// Whether the interpreter's `next` and thread head must be read to tell
// that the lists are unchanged. With one interpreter, on 3.11 (where its
// range holds nothing else: the GIL is in the runtime), they need not be:
// * an interpreter is only ever added at the runtime's head, which is read,
//   so the last interpreter's `next` stays null;
// * a thread is only ever added at the head, which sets the old first
//   thread's `prev`: a planned first thread whose `prev` is still null is
//   still first, unless it was removed;
// * removing a thread state clears its data-stack chunk pointer before its
//   memory is freed (tstate_delete_common), so a planned first thread that
//   had a chunk no longer matches the plan. Its memory reused by a new
//   thread state is that thread's, added at the head (a true read); reused
//   by anything else, it would have to repeat five pointers of the plan,
//   the standard every other check here holds to (code objects included).
// One remote range less per sample (bench/README.md, fifth round).
bool StackReader::interpreter_read_needed() const {
  const bool layout_allows = layout_.thread.prev != kAbsent && layout_.gil.scope == GilScope::kRuntime &&
                             layout_.frame_model == FrameModel::kCFrame;
  return !(layout_allows && plan_.interps.size() == 1 && plan_.thread_counts[0] > 0 &&
           plan_.threads[0].chunk != 0);
}

// Whether the copies describe the same lists as the plan: the runtime's
// head, each interpreter's next and first thread, each thread's next, its
// interpreter and chunk are the addresses the plan read. Then each copy was
// read after the pointer to it (same call, earlier region), as the
// step-by-step walk would have read it. (A thread's C frame that moved is
// that thread's alone: read_planned_thread.)
bool StackReader::planned_lists_unchanged() const {
  const auto& t = layout_.thread;
  const size_t interps = plan_.interps.size();
  if (planned_head_ != (interps == 0 ? 0 : plan_.interps[0])) return false;
  size_t index = 0;
  for (size_t i = 0; i < interps; ++i) {
    const InterpCopy& interp = interp_copies_[i];
    const size_t count = plan_.thread_counts[i];
    if (!interp_read_) {
      // See interpreter_read_needed: the first thread is still first.
      if (field<uint64_t>(thread_copies_[index].state.data(), t.prev) != 0) return false;
    } else if (interp.next != (i + 1 < interps ? plan_.interps[i + 1] : 0) ||
               interp.threads != (count == 0 ? 0 : plan_.threads[index].tstate)) {
      return false;
    }
    for (size_t k = 0; k < count; ++k, ++index) {
      const ThreadPlan& plan = plan_.threads[index];
      const char* state = thread_copies_[index].state.data();
      const uint64_t next = k + 1 < count ? plan_.threads[index + 1].tstate : 0;
      if (field<uint64_t>(state, t.next) != next ||
          field<uint64_t>(state, t.interp) != plan_.interps[i]) {
        return false;
      }
      if (layout_.frame_model != FrameModel::kFrameObjects &&
          field<uint64_t>(state, t.datastack_chunk) != plan.chunk) {
        return false;
      }
    }
  }
  return true;
}

// The fast path: everything the last sample walked, read again in one call
// at the same addresses, then used only if the lists still agree. False,
// with nothing trusted, when they do not or when anything fails: the caller
// then walks step by step.
bool StackReader::read_planned(std::vector<PythonThreadStack>& out, std::string& error, ThreadActivity* activity) {
  build_planned_regions(out, activity);
  codes_.add_prefetch_regions(regions_);
  if (!memory_.read_many(regions_)) return false;
  codes_.set_prefetched(true);
  if (!planned_lists_unchanged()) return false;
  observed_.clear();
  size_t index = 0;
  for (size_t i = 0; i < plan_.interps.size(); ++i) {
    const uint64_t interp = plan_.interps[i];
    const Gil gil = layout_.gil.scope == GilScope::kInterpreter ? interp_copies_[i].gil
                                                                : planned_runtime_gil_;
    observed_.interps.push_back(interp);
    observed_.thread_counts.push_back(plan_.thread_counts[i]);
    for (size_t k = 0; k < plan_.thread_counts[i]; ++k, ++index) {
      if (out.size() <= index) out.emplace_back();
      if (!read_planned_thread(index, interp, gil, observed_.add_thread(), out[index], error)) return false;
    }
  }
  out.resize(index);
  return true;
}

// One thread of the planned read, noted in `plan` for the next. Its frames
// come from the copies read ahead, but for two cases:
// * a thread that has not run since the last read keeps that read's stack;
// * a thread whose C frame moved (3.11: it returned to C and called back
//   in, as training code does all the time) is walked from its new C frame,
//   read now, each frame read as the walk finds it: the copies were taken
//   before that frame's pointer was read.
bool StackReader::read_planned_thread(size_t index, uint64_t interp, const Gil& gil, ThreadPlan& plan,
                                      PythonThreadStack& out, std::string& error) {
  const ThreadPlan& planned = plan_.threads[index];
  const ThreadCopy& copy = thread_copies_[index];
  const char* state = copy.state.data();
  plan.tstate = planned.tstate;
  plan.interp = interp;
  plan.cframe = planned.cframe;
  plan.chunk = planned.chunk;
  uint64_t frame = field<uint64_t>(state, layout_.thread.frame);
  bool cframe_moved = false;
  if (layout_.frame_model == FrameModel::kCFrame) {
    cframe_moved = frame != planned.cframe;
    plan.cframe = frame;
    if (!cframe_moved) {
      frame = frame != 0 ? copy.current_frame : 0;
    } else if (frame != 0 && !memory_.read_value(frame + layout_.cframe.current_frame, frame)) {
      error = fmt::format("cannot read the C frame of thread state 0x{:x}", planned.tstate);
      return false;
    }
  }
  if (still_[index] && !cframe_moved && keep_still_thread(state, planned, frame, gil, out)) {
    plan.chunk_end = planned.chunk_end;
    plan.loose = planned.loose;
    plan.top_frame = planned.top_frame;
    return true;
  }
  // Nothing of a thread kept from the read (whose state then disagreed) or
  // walked anew was read ahead.
  walk_ = still_[index] || cframe_moved ? Walk{.chunk_base = planned.chunk, .record = &plan}
                                        : Walk{.chunk_base = planned.chunk,
                                               .chunk = copy.chunk.data(),
                                               .chunk_size = copy.chunk_size,
                                               .plan = &planned,
                                               .loose = copy.loose.data(),
                                               .record = &plan};
  return read_thread(state, planned.tstate, interp, gil, frame, index, out, error);
}

// Whether the output at `slot` holds what the last read found for the
// thread state at `tstate`, its frames viewing live cache entries.
bool StackReader::kept_from_last_read(size_t slot, uint64_t tstate, const std::vector<PythonThreadStack>& out) const {
  return last_read_of(slot, tstate) != nullptr && slots_[slot].code_generation == codes_.generation() &&
         out[slot].native_tid > 0;
}

// A thread that has not run since the last read: its stack in `out` is
// kept as that read left it, once its thread state is seen to be the same
// thread's, at the same innermost frame (a thread that has not run cannot
// have pushed or popped one, and its frames hold their code objects alive).
bool StackReader::keep_still_thread(const char* state, const ThreadPlan& planned, uint64_t frame, const Gil& gil,
                                    PythonThreadStack& out) {
  const auto& t = layout_.thread;
  const bool same_thread = t.native_thread_id != kAbsent
                               ? static_cast<int64_t>(field<uint64_t>(state, t.native_thread_id)) == out.native_tid
                               : field<uint64_t>(state, t.thread_id) == out.python_thread_id;
  if (!same_thread || frame != planned.top_frame) return false;
  out.holds_gil = gil.locked != 0 && gil.holder == planned.tstate;
  out.unchanged = true;
  out.same_outer_frames = out.frames.size();
  ++stacks_kept_still_;
  return true;
}

// The innermost frame of the thread whose state's bytes are `state`, and
// (3.11, 3.12) `cframe`, the C frame it was read through.
bool StackReader::current_frame(const char* state, uint64_t tstate, uint64_t& cframe, uint64_t& frame,
                                std::string& error) const {
  frame = field<uint64_t>(state, layout_.thread.frame);
  if (layout_.frame_model == FrameModel::kCFrame) {
    // tstate->cframe points to a struct on the thread's C stack.
    cframe = frame;
    if (frame != 0 && !memory_.read_value(frame + layout_.cframe.current_frame, frame)) {
      error = fmt::format("cannot read the C frame of thread state 0x{:x}", tstate);
      return false;
    }
  }
  return true;
}

// One thread from its state's bytes and its innermost frame, with walk_ set
// up to find the frames.
bool StackReader::read_thread(const char* state, uint64_t tstate, uint64_t interp, const Gil& gil,
                              uint64_t frame, size_t slot, PythonThreadStack& out,
                              std::string& error) {
  walk_.record->top_frame = frame;
  if (field<uint64_t>(state, layout_.thread.interp) != interp) {
    error = fmt::format("the thread state at 0x{:x} belongs to another interpreter", tstate);
    return false;  // freed and reused while we walked the list
  }
  out.python_thread_id = field<uint64_t>(state, layout_.thread.thread_id);
  out.native_tid = layout_.thread.native_thread_id == kAbsent
                       ? -1
                       : static_cast<int64_t>(field<uint64_t>(state, layout_.thread.native_thread_id));
  out.holds_gil = gil.locked != 0 && gil.holder == tstate;
  if (!walk_frames(frame, slot, tstate, out, error)) return false;
  if (ends_in_generator()) join_torn_generator(tstate, slot, out);
  return true;
}

bool StackReader::walk_frames(uint64_t frame, size_t slot, uint64_t tstate, PythonThreadStack& out,
                              std::string& error) {
  raw_frames_.clear();
  const bool ok = layout_.frame_model == FrameModel::kFrameObjects
                      ? collect_frame_objects(frame, error)
                      : collect_interpreter_frames(frame, error);
  return ok && resolve_frames(slot, tstate, out, error);
}

// A generator's frame links to its caller only while it runs: one that
// yielded between the reads of the thread's innermost frame and of the
// generator's frame ends the chain there, as if nothing had called it (on a
// `tuple(x for x in ...)` line, four samples of the generator in five were
// that one frame). No thread starts in a generator, so such a chain is torn.
bool StackReader::ends_in_generator() const {
  return !raw_frames_.empty() && (raw_frames_.back().generator || code_infos_.back()->generator);
}

// The torn chain's frames on top of the thread's stack read again right
// after (kMostTornRetries reads at most, until one is whole): the callers it
// has just returned to. The sample stays the generator's, as it was when the
// read began; the later read alone would count the generator's time to its
// callers (a quarter as many samples on that generator's line). A reread
// that finds the generator running again is whole by itself. A generator
// is joined at the innermost frame of the function that drives it, read
// again while that function has returned (a quarter of the joins skipped it
// otherwise): from 3.11 the function that defines it ("f.<locals>.g"),
// before 3.11 a frame of the same file at the generator's line (where a
// generator expression's own line is its caller's). When no reread is
// whole, the torn chain is kept as read, and counted.
void StackReader::join_torn_generator(uint64_t tstate, size_t slot, PythonThreadStack& out) {
  ++torn_stacks_;
  torn_frames_.assign(out.frames.begin(), out.frames.end());
  bool joined = false;
  for (int read = 0; read < kMostTornRetries && !joined; ++read) {
    if (!reread_frames(tstate, slot, out) || ends_in_generator()) continue;
    const bool last_read = read + 1 == kMostTornRetries;
    joined = join_at_enclosing_function(out.frames, last_read);
  }
  if (!joined) {
    ++torn_stacks_unjoined_;
    out.frames.assign(torn_frames_.begin(), torn_frames_.end());
  }
  // Not what the last walk found: nothing is kept from it, now or next time.
  out.unchanged = false;
  out.same_outer_frames = 0;
  slots_[slot].tstate = 0;
}

// Puts torn_frames_ on top of `frames`, a whole stack read after them, at
// the innermost frame of the function that drives the generator, when it
// can be told; else on top. False, leaving `frames`, when that function is
// not in them, unless `anyway`.
bool StackReader::join_at_enclosing_function(std::vector<PythonFrame>& frames, bool anyway) const {
  if (torn_frames_.empty()) return true;
  auto code_of = [](const PythonFrame& frame) { return frame.key >> 32; };
  if (!frames.empty() && code_of(frames.front()) == code_of(torn_frames_.front())) return true;  // running again
  const PythonFrame& generator = torn_frames_.back();
  const size_t locals = generator.function.rfind(".<locals>.");
  std::function<bool(const PythonFrame&)> drives;
  if (locals != std::string_view::npos) {
    drives = [&](const PythonFrame& f) { return f.function == generator.function.substr(0, locals); };
  } else if (layout_.code.qualname == kAbsent) {
    drives = [&](const PythonFrame& f) { return f.file == generator.file && f.line == generator.line; };
  }
  auto caller = frames.begin();
  if (drives) {
    caller = std::find_if(frames.begin(), frames.end(), drives);
    if (caller == frames.end()) {
      if (!anyway) return false;
      caller = frames.begin();
    }
  }
  frames.erase(frames.begin(), caller);
  frames.insert(frames.begin(), torn_frames_.begin(), torn_frames_.end());
  return true;
}

// The thread read again from its state, each frame read as the walk finds
// it. False when that fails.
bool StackReader::reread_frames(uint64_t tstate, size_t slot, PythonThreadStack& out) {
  std::string error;
  uint64_t cframe = 0, frame = 0;
  reread_state_.resize(thread_bytes_);
  if (!memory_.read(tstate, reread_state_.data(), thread_bytes_) ||
      !current_frame(reread_state_.data(), tstate, cframe, frame, error)) {
    return false;
  }
  ThreadPlan& record = *walk_.record;
  record.cframe = cframe;
  record.top_frame = frame;
  record.chunk_end = 0;
  record.loose.clear();
  walk_ = Walk{.chunk_base = walk_.chunk_base, .record = &record};
  return walk_frames(frame, slot, tstate, out, error);
}

// Follows a frame chain from `frame`, bounded and cycle-checked, handing
// each frame's bytes to `decode`, which records it and returns the next.
template <typename Decode>
bool StackReader::walk_frame_chain(uint64_t frame, std::string& error, Decode decode) {
  CycleGuard cycle;
  while (frame != 0) {
    if (raw_frames_.size() == kMaxStackDepth || cycle.seen(frame)) {
      error = "the frame chain is cyclic or deeper than 1024";
      return false;
    }
    const char* bytes = frame_bytes_at(frame);
    if (bytes == nullptr) {
      error = fmt::format("cannot read the frame at 0x{:x}", frame);
      return false;
    }
    frame = decode(bytes);
  }
  return true;
}

bool StackReader::collect_frame_objects(uint64_t frame, std::string& error) {
  const auto& f = layout_.frame_object;
  return walk_frame_chain(frame, error, [&](const char* bytes) {
    RawFrame raw;
    raw.code = field<uint64_t>(bytes, f.code);
    raw.lasti = field<int>(bytes, f.lasti);
    // PyFrame_GetLineNumber: 3.10 trusts f_lineno whenever it is non-zero,
    // 3.8-3.9 only while the frame is traced.
    const bool lineno_valid = layout_.minor >= 10 || field<uint64_t>(bytes, f.trace) != 0;
    raw.lineno = lineno_valid ? field<int>(bytes, f.lineno) : 0;
    raw_frames_.push_back(raw);
    return field<uint64_t>(bytes, f.back);
  });
}

// The bytes of the frame at `frame`: from the copy of the data-stack chunk,
// from the frames read ahead, or read now; noted for the next plan.
const char* StackReader::frame_bytes_at(uint64_t frame) {
  if (const char* bytes = chunk_frame(frame)) return bytes;
  const char* bytes = loose_frame(frame);
  if (bytes == nullptr) {
    if (!memory_.read(frame, frame_buffer_.data(), frame_bytes_)) return nullptr;
    bytes = frame_buffer_.data();
    walk_.fresh = true;
  }
  walk_.record->loose.push_back(frame);
  return bytes;
}

// Frames of 3.11+ live in the thread's data-stack chunk, one after another.
// The first frame found inside the chunk is read together with everything
// below it in one call (unless the planned copy already holds it); its
// callers are then resolved from that copy. Frames elsewhere (generators,
// coroutines, older chunks) are read one by one.
const char* StackReader::chunk_frame(uint64_t frame) {
  const uint64_t base = walk_.chunk_base;
  if (base == 0 || frame < base || frame - base > kMaxChunkRead - frame_bytes_) return nullptr;
  const size_t end = frame - base + frame_bytes_;
  if (end > walk_.chunk_size && !walk_.chunk_read) {
    walk_.chunk_read = true;
    chunk_buffer_.resize(end);
    if (memory_.read(base, chunk_buffer_.data(), end)) {
      walk_.chunk = chunk_buffer_.data();
      walk_.chunk_size = end;
      walk_.fresh = true;
    }
  }
  if (end > walk_.chunk_size) return nullptr;
  walk_.record->chunk_end = std::max(walk_.record->chunk_end, end);
  return walk_.chunk + (frame - base);
}

// A frame read ahead at an address the last sample found outside the chunk.
// Usable only while nothing of this walk was read after the speculative
// call: then the pointer to it came from an earlier region of that call
// (the planned frames are in chain order, and only later ones are searched),
// so it was read before the frame, as the step-by-step walk would. A frame
// at that address may since have been freed and reused for another, but
// then it is that other frame that the pointer names.
const char* StackReader::loose_frame(uint64_t frame) {
  if (walk_.plan == nullptr || walk_.fresh) return nullptr;
  const std::vector<uint64_t>& loose = walk_.plan->loose;
  for (size_t i = walk_.loose_next; i < loose.size(); ++i) {
    if (loose[i] == frame) {
      walk_.loose_next = i + 1;
      return walk_.loose + i * frame_bytes_;
    }
  }
  return nullptr;
}

bool StackReader::collect_interpreter_frames(uint64_t frame, std::string& error) {
  const auto& f = layout_.interpreter_frame;
  return walk_frame_chain(frame, error, [&](const char* bytes) {
    const int owner = field<char>(bytes, f.owner);
    // Shim frames owned by the C stack (3.12+) run no Python code; each call
    // of the evaluation loop pushes one before the first frame it runs.
    if (owner == f.owned_by_cstack) {
      if (!raw_frames_.empty()) raw_frames_.back().entry = true;
    } else {
      RawFrame raw;
      raw.code = field<uint64_t>(bytes, f.code);
      raw.instr = field<uint64_t>(bytes, f.instr);
      raw.generator = owner == f.owned_by_generator;
      raw.entry = f.is_entry != kAbsent && field<char>(bytes, f.is_entry) != 0;
      raw_frames_.push_back(raw);
    }
    return field<uint64_t>(bytes, f.previous);
  });
}

bool StackReader::resolve_frames(size_t slot, uint64_t tstate, PythonThreadStack& out,
                                 std::string& error) {
  code_addresses_.clear();
  for (const RawFrame& raw : raw_frames_) code_addresses_.push_back(raw.code);
  // The headers read ahead were read after every frame of the speculative
  // call; not after a frame this walk had to read later.
  const bool prefetched = walk_.plan != nullptr && !walk_.fresh;
  // Every code object is revalidated, whether its frame changed or not.
  if (!codes_.lookup(code_addresses_, code_infos_, error, prefetched)) return false;
  if (slots_.size() <= slot) slots_.resize(slot + 1);
  slots_[slot].code_generation = codes_.generation();  // the entries just looked up are live
  signature_.clear();
  for (size_t i = 0; i < raw_frames_.size(); ++i) {
    const RawFrame& raw = raw_frames_[i];
    signature_.push_back({code_infos_[i]->id, raw.lasti, raw.lineno, raw.instr, raw.entry});
  }
  const SlotSignature* last = last_read_of(slot, tstate);
  const size_t same_raw = last != nullptr ? same_outer_frames(last->frames, signature_) : 0;
  const size_t inner_raw = raw_frames_.size() - same_raw;
  out.unchanged = last != nullptr && inner_raw == 0 && last->frames.size() == same_raw;
  if (out.unchanged) {
    out.same_outer_frames = out.frames.size();
    return true;  // out.frames still hold these frames
  }
  // The same raw frames decode to the same frames (hidden ones included):
  // out.frames ends with them, and only the inner part is built anew.
  size_t kept = 0;
  for (size_t i = inner_raw; i < raw_frames_.size(); ++i) {
    if (!incomplete(raw_frames_[i], *code_infos_[i])) ++kept;
  }
  kept = std::min(kept, out.frames.size());
  out.frames.erase(out.frames.begin(), out.frames.end() - static_cast<std::ptrdiff_t>(kept));
  out.same_outer_frames = kept;
  inner_frames_.clear();
  for (size_t i = 0; i < inner_raw; ++i) {
    const CodeInfo& code = *code_infos_[i];
    if (incomplete(raw_frames_[i], code)) continue;
    const int line = line_of(raw_frames_[i], code);
    const uint64_t key = (static_cast<uint64_t>(code.id) << 32) | static_cast<uint32_t>(line);
    inner_frames_.push_back({code.function, code.file, line, key, raw_frames_[i].entry});
  }
  out.frames.insert(out.frames.begin(), inner_frames_.begin(), inner_frames_.end());
  slots_[slot].tstate = tstate;
  slots_[slot].frames.swap(signature_);
  return true;
}

// What the last read left at `slot`, when it was this thread state and the
// caller kept that read's output as it was; else nullptr.
const StackReader::SlotSignature* StackReader::last_read_of(size_t slot, uint64_t tstate) const {
  if (!out_intact_ || slot >= last_out_size_ || slot >= slots_.size() ||
      slots_[slot].tstate != tstate) {
    return nullptr;
  }
  return &slots_[slot];
}

// How many outermost frames (the ends of the lists) are equal. Code ids are
// never reused, so an equal id is the same cache entry, still alive (the
// lookup just returned it): the views the kept frames hold are good.
size_t StackReader::same_outer_frames(const std::vector<FrameSignature>& last,
                                      const std::vector<FrameSignature>& now) {
  size_t same = 0;
  while (same < last.size() && same < now.size() &&
         last[last.size() - 1 - same] == now[now.size() - 1 - same]) {
    ++same;
  }
  return same;
}

void StackReader::remember_read(const std::vector<PythonThreadStack>& out) {
  last_out_ = out.data();
  last_out_size_ = out.size();
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
