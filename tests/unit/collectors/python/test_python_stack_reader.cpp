// The stack reader against interpreter structures faked in this process's own
// memory (read through process_vm_readv like any target), laid out with the
// generated 3.11 table: the normal case, and the torn or hostile memory it
// must turn into error samples rather than crashes or wrong stacks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "collectors/python/offsets_generated.hpp"
#include "collectors/python/stack_reader.hpp"

namespace stepscope::python {
namespace {

const PythonLayout& kLayout = kLayout3_11;

// Zeroed blocks of this process's memory standing in for a target's objects,
// laid out as `layout` says.
class FakeHeap {
 public:
  explicit FakeHeap(const PythonLayout& layout = kLayout) : layout_(layout) {}
  const PythonLayout& layout() const { return layout_; }
  uint64_t alloc(size_t size) {
    blocks_.push_back(std::make_unique<std::vector<char>>(size + 64, '\0'));
    return reinterpret_cast<uint64_t>(blocks_.back()->data());
  }
  template <class T>
  void put(uint64_t address, uint32_t offset, T value) {
    ASSERT_NE(offset, kAbsent);
    std::memcpy(reinterpret_cast<char*>(address + offset), &value, sizeof value);
  }
  uint64_t str(const std::string& text) {
    const auto& u = layout_.unicode;
    uint64_t address = alloc(u.ascii_size + text.size() + 1);
    put<int64_t>(address, u.length, static_cast<int64_t>(text.size()));
    uint32_t kind_1 = u.kind_mask & ~(u.kind_mask << 1);  // the lowest bit of the field
    put<uint32_t>(address, u.state, kind_1 | u.compact_mask | u.ascii_mask);
    std::memcpy(reinterpret_cast<char*>(address + u.ascii_size), text.data(), text.size());
    return address;
  }
  uint64_t bytes(const std::string& data) {
    uint64_t address = alloc(layout_.bytes.ob_sval + data.size());
    put<int64_t>(address, layout_.bytes.ob_size, static_cast<int64_t>(data.size()));
    std::memcpy(reinterpret_cast<char*>(address + layout_.bytes.ob_sval), data.data(), data.size());
    return address;
  }
  // A code object whose 8 code units are all on line first_line + 1.
  uint64_t code(const std::string& name, const std::string& file, int first_line) {
    const auto& c = layout_.code;
    uint64_t address = alloc(c.code_adaptive != kAbsent ? c.code_adaptive + 16 : 512);
    put(address, c.name, str(name));
    if (c.qualname != kAbsent) put(address, c.qualname, str("Class." + name));
    put(address, c.filename, str(file));
    put(address, c.firstlineno, first_line);
    const char kNoColumnsEightUnits = static_cast<char>(0x80 | (13 << 3) | 7);
    put(address, c.linetable, bytes(std::string{kNoColumnsEightUnits, 2}));  // line delta +1
    return address;
  }
  uint64_t frame(uint64_t code, uint64_t previous, int instruction) {
    return frame_at(alloc(layout_.interpreter_frame.size), code, previous, instruction);
  }
  // An interpreter frame at `address`, e.g. inside a fake data-stack chunk.
  uint64_t frame_at(uint64_t address, uint64_t code, uint64_t previous, int instruction) {
    const auto& f = layout_.interpreter_frame;
    put(address, f.code, code);
    put(address, f.previous, previous);
    put<uint64_t>(address, f.instr, code + layout_.code.code_adaptive + 2 * instruction);
    return address;
  }

 private:
  const PythonLayout& layout_;
  std::vector<std::unique_ptr<std::vector<char>>> blocks_;
};

// _PyRuntime -> one interpreter -> one thread -> its C frame -> `top`.
struct FakeInterpreter {
  FakeHeap& heap;
  const PythonLayout& layout = heap.layout();
  uint64_t runtime = heap.alloc(2048);
  uint64_t interp = heap.alloc(2048);
  uint64_t tstate = heap.alloc(512);
  uint64_t cframe = heap.alloc(16);

  explicit FakeInterpreter(FakeHeap& h, uint64_t top) : heap(h) {
    heap.put(runtime, layout.runtime.interpreters_head, interp);
    uint64_t gil_owner = layout.gil.scope == GilScope::kRuntime ? runtime : interp;
    heap.put(gil_owner, layout.gil.locked, 1);
    heap.put(gil_owner, layout.gil.last_holder, tstate);
    heap.put(interp, layout.interpreter.threads_head, tstate);
    heap.put(tstate, layout.thread.interp, interp);
    heap.put(tstate, layout.thread.frame, cframe);
    heap.put<uint64_t>(tstate, layout.thread.thread_id, 1234);
    heap.put<uint64_t>(tstate, layout.thread.native_thread_id, 99);
    heap.put(cframe, layout.cframe.current_frame, top);
  }
};

TEST(PythonStackReader, ReadsThreadsAndFrames) {
  FakeHeap heap;
  uint64_t outer = heap.frame(heap.code("outer", "/app/main.py", 10), 0, 3);
  uint64_t inner = heap.frame(heap.code("inner", "/app/lib.py", 20), outer, 5);
  FakeInterpreter fake(heap, inner);
  ProcessMemory memory(::getpid());
  StackReader reader(memory, kLayout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  ASSERT_TRUE(reader.read(threads, error)) << error;
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].native_tid, 99);
  EXPECT_EQ(threads[0].python_thread_id, 1234u);
  EXPECT_TRUE(threads[0].holds_gil);
  ASSERT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].frames[0].function, "Class.inner");
  EXPECT_EQ(threads[0].frames[0].file, "/app/lib.py");
  EXPECT_EQ(threads[0].frames[0].line, 21);
  EXPECT_EQ(threads[0].frames[1].function, "Class.outer");
  EXPECT_EQ(threads[0].frames[1].line, 11);

  uint64_t inner_key = threads[0].frames[0].key;
  ASSERT_TRUE(reader.read(threads, error)) << error;
  EXPECT_EQ(threads[0].frames[0].key, inner_key) << "keys are stable across samples";
  EXPECT_NE(threads[0].frames[1].key, inner_key);
}

TEST(PythonStackReader, NoticesACodeObjectReplacedAtTheSameAddress) {
  FakeHeap heap;
  uint64_t code = heap.code("before", "/app/a.py", 1);
  FakeInterpreter fake(heap, heap.frame(code, 0, 0));
  ProcessMemory memory(::getpid());
  StackReader reader(memory, kLayout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  ASSERT_TRUE(reader.read(threads, error)) << error;
  EXPECT_EQ(threads[0].frames[0].function, "Class.before");
  uint64_t old_key = threads[0].frames[0].key;

  heap.put(code, kLayout.code.qualname, heap.str("after"));  // freed, and reused
  ASSERT_TRUE(reader.read(threads, error)) << error;
  EXPECT_EQ(threads[0].frames[0].function, "after");
  EXPECT_NE(threads[0].frames[0].key, old_key) << "a new code object gets new keys";
}

TEST(PythonStackReader, SkipsShimFramesOwnedByTheCStack) {
  const PythonLayout& layout = kLayout3_12;
  FakeHeap heap(layout);
  uint64_t outer = heap.frame(heap.code("outer", "/app/a.py", 1), 0, 0);
  uint64_t shim = heap.frame(heap.code("<shim>", "", 0), outer, 0);
  heap.put<char>(shim, layout.interpreter_frame.owner,
                 static_cast<char>(layout.interpreter_frame.owned_by_cstack));
  uint64_t inner = heap.frame(heap.code("inner", "/app/a.py", 5), shim, 0);
  FakeInterpreter fake(heap, inner);
  ProcessMemory memory(::getpid());
  StackReader reader(memory, layout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  ASSERT_TRUE(reader.read(threads, error)) << error;
  ASSERT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].frames[0].function, "Class.inner");
  EXPECT_EQ(threads[0].frames[1].function, "Class.outer");
  EXPECT_TRUE(threads[0].holds_gil) << "3.12 keeps the GIL in the interpreter";
}

TEST(PythonStackReader, ACyclicFrameChainIsAnErrorSample) {
  FakeHeap heap;
  uint64_t code = heap.code("f", "/app/a.py", 1);
  uint64_t first = heap.frame(code, 0, 0);
  uint64_t second = heap.frame(code, first, 0);
  heap.put(first, kLayout.interpreter_frame.previous, second);  // first <-> second
  FakeInterpreter fake(heap, second);
  ProcessMemory memory(::getpid());
  StackReader reader(memory, kLayout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  EXPECT_FALSE(reader.read(threads, error));
  EXPECT_NE(error.find("cyclic"), std::string::npos) << error;
}

TEST(PythonStackReader, ACyclicThreadListIsAnErrorSample) {
  FakeHeap heap;
  FakeInterpreter fake(heap, 0);
  heap.put(fake.tstate, kLayout.thread.next, fake.tstate);
  ProcessMemory memory(::getpid());
  StackReader reader(memory, kLayout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  EXPECT_FALSE(reader.read(threads, error));
  EXPECT_NE(error.find("thread list"), std::string::npos) << error;
}

TEST(PythonStackReader, UnmappedPointersAreErrorSamples) {
  FakeHeap heap;
  FakeInterpreter fake(heap, 0x10);  // the first page is never mapped
  ProcessMemory memory(::getpid());
  StackReader reader(memory, kLayout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  EXPECT_FALSE(reader.read(threads, error));
  EXPECT_FALSE(error.empty());
  EXPECT_FALSE(reader.memory_gone()) << "the process is there: a torn or bad read, an error sample";
}

// A process that exits lets go of its memory before its parent reaps it:
// reading it then fails as if it were gone, which is no torn read.
TEST(PythonStackReader, AProcessWithoutMemoryIsGoneNotTorn) {
  FakeHeap heap;
  FakeInterpreter fake(heap, heap.frame(heap.code("f", "/app/a.py", 1), 0, 0));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), nullptr, WEXITED | WNOWAIT), 0);  // a zombie now
  ProcessMemory memory(child);
  StackReader reader(memory, kLayout, fake.runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  EXPECT_FALSE(reader.read(threads, error));
  EXPECT_TRUE(reader.memory_gone()) << error;
  ::waitpid(child, nullptr, 0);
}

TEST(PythonStackReader, ObjectsOfTheWrongTypeAreRejected) {
  FakeHeap heap;
  uint64_t code = heap.code("f", "/app/a.py", 1);
  FakeInterpreter fake(heap, heap.frame(code, 0, 0));
  ProcessMemory memory(::getpid());
  uint64_t code_type = heap.alloc(8);
  StackReader reader(memory, kLayout, fake.runtime, code_type);
  std::vector<PythonThreadStack> threads;
  std::string error;
  EXPECT_FALSE(reader.read(threads, error));
  EXPECT_NE(error.find("not a code object"), std::string::npos) << error;
  heap.put(code, kLayout.object.type, code_type);
  EXPECT_TRUE(reader.read(threads, error)) << error;
}

// Samples after the first read everything in one process_vm_readv at the
// addresses found before, and must still see every change the target makes.
struct ChunkedStack {
  FakeHeap heap;
  uint64_t chunk = heap.alloc(4096);
  uint64_t outer_code = heap.code("outer", "/app/a.py", 10);
  uint64_t inner_code = heap.code("inner", "/app/a.py", 20);
  uint64_t outer = heap.frame_at(chunk + 64, outer_code, 0, 1);
  uint64_t inner = heap.frame_at(chunk + 64 + kLayout.interpreter_frame.size, inner_code, outer, 2);
  FakeInterpreter fake{heap, inner};
  ProcessMemory memory{::getpid()};
  StackReader reader{memory, kLayout, fake.runtime, 0};
  std::vector<PythonThreadStack> threads;
  std::string error;

  ChunkedStack() { heap.put(fake.tstate, kLayout.thread.datastack_chunk, chunk); }
  // The functions of each thread's frames, innermost first, and the reads it took.
  std::vector<std::vector<std::string>> sample(uint64_t* reads = nullptr) {
    const uint64_t before = memory.system_calls();
    std::vector<std::vector<std::string>> names;
    if (!reader.read(threads, error)) return {{"error: " + error}};
    if (reads != nullptr) *reads = memory.system_calls() - before;
    for (const auto& thread : threads) {
      names.emplace_back();
      for (const auto& frame : thread.frames) names.back().emplace_back(frame.function);
    }
    return names;
  }
};

using Names = std::vector<std::vector<std::string>>;

TEST(PythonStackReader, SteadySamplesTakeOneRead) {
  ChunkedStack s;
  const Names expected{{"Class.inner", "Class.outer"}};
  uint64_t reads = 0;
  EXPECT_EQ(s.sample(&reads), expected);
  EXPECT_GE(reads, 4u) << "the first sample walks step by step";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s.sample(&reads), expected);
    EXPECT_EQ(reads, 1u) << "runtime, interpreter, thread, C frame, chunk and code objects at once";
  }
  EXPECT_EQ(s.threads[0].frames[0].line, 21);
  EXPECT_TRUE(s.threads[0].holds_gil);
}

TEST(PythonStackReader, SeesFramesPushedAndPoppedBetweenSamples) {
  ChunkedStack s;
  s.sample();
  s.sample();
  const uint64_t new_code = s.heap.code("callee", "/app/b.py", 30);
  const uint64_t callee = s.heap.frame_at(s.chunk + 64 + 2 * kLayout.interpreter_frame.size,
                                          new_code, s.inner, 0);
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, callee);
  uint64_t reads = 0;
  EXPECT_EQ(s.sample(), (Names{{"Class.callee", "Class.inner", "Class.outer"}}));
  EXPECT_EQ(s.sample(&reads), (Names{{"Class.callee", "Class.inner", "Class.outer"}}));
  EXPECT_EQ(reads, 1u);
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, s.outer);
  EXPECT_EQ(s.sample(&reads), (Names{{"Class.outer"}}));
  EXPECT_EQ(reads, 1u) << "same lists and known code objects";
  // A frame beyond the page-rounded copy of the chunk is still found.
  const uint64_t far = s.heap.frame_at(s.chunk + 3000, new_code, s.outer, 0);
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, far);
  EXPECT_EQ(s.sample(), (Names{{"Class.callee", "Class.outer"}}));
}

TEST(PythonStackReader, SeesTheCFrameAndChunkChange) {
  ChunkedStack s;
  s.sample();
  s.sample();
  // A new C frame (the thread returned to C and called back in).
  const uint64_t cframe = s.heap.alloc(16);
  s.heap.put(cframe, kLayout.cframe.current_frame, s.outer);
  s.heap.put(s.fake.tstate, kLayout.thread.frame, cframe);
  EXPECT_EQ(s.sample(), (Names{{"Class.outer"}}));
  // A new chunk whose frame sits at an address the old copy covered.
  const uint64_t chunk = s.heap.alloc(4096);
  const uint64_t moved = s.heap.frame_at(chunk + 64, s.inner_code, 0, 0);
  s.heap.put(s.fake.tstate, kLayout.thread.datastack_chunk, chunk);
  s.heap.put(cframe, kLayout.cframe.current_frame, moved);
  EXPECT_EQ(s.sample(), (Names{{"Class.inner"}}));
  EXPECT_EQ(s.sample(), (Names{{"Class.inner"}}));
  // A code object replaced at its address while the plan holds it.
  s.heap.put(s.inner_code, kLayout.code.qualname, s.heap.str("replaced"));
  EXPECT_EQ(s.sample(), (Names{{"replaced"}}));
}

// A stack whose code objects and instructions did not move is flagged, its
// frames left as they were; any change, or an output the caller touched, is not.
TEST(PythonStackReader, FlagsAStackUnchangedSinceTheLastRead) {
  ChunkedStack s;
  const Names expected{{"Class.inner", "Class.outer"}};
  EXPECT_EQ(s.sample(), expected);
  EXPECT_FALSE(s.threads[0].unchanged) << "nothing to compare with";
  EXPECT_EQ(s.sample(), expected);
  EXPECT_TRUE(s.threads[0].unchanged);
  EXPECT_EQ(s.threads[0].frames[0].line, 21);
  EXPECT_EQ(s.threads[0].same_outer_frames, 2u);
  // The inner frame moves to another instruction (the same line here).
  s.heap.frame_at(s.inner, s.inner_code, s.outer, 3);
  EXPECT_EQ(s.sample(), expected);
  EXPECT_FALSE(s.threads[0].unchanged);
  EXPECT_EQ(s.threads[0].same_outer_frames, 1u) << "the outer frame did not move";
  EXPECT_EQ(s.sample(), expected);
  EXPECT_TRUE(s.threads[0].unchanged);
  // A call from the inner frame: both callers are kept, the callee is new.
  const uint64_t callee_code = s.heap.code("callee", "/app/b.py", 30);
  const uint64_t callee = s.heap.frame_at(s.chunk + 64 + 2 * kLayout.interpreter_frame.size,
                                          callee_code, s.inner, 1);
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, callee);
  EXPECT_EQ(s.sample(), (Names{{"Class.callee", "Class.inner", "Class.outer"}}));
  EXPECT_EQ(s.threads[0].same_outer_frames, 2u);
  EXPECT_EQ(s.threads[0].frames[0].line, 31);
  // It returns: the remaining frames are all the previous read's outer ones.
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, s.inner);
  EXPECT_EQ(s.sample(), expected);
  EXPECT_FALSE(s.threads[0].unchanged);
  EXPECT_EQ(s.threads[0].same_outer_frames, 2u);
  EXPECT_EQ(s.threads[0].frames[0].line, 21);
  // A code object replaced at its address is decoded anew, not reused.
  s.heap.put(s.inner_code, kLayout.code.qualname, s.heap.str("replaced"));
  EXPECT_EQ(s.sample(), (Names{{"replaced", "Class.outer"}}));
  EXPECT_FALSE(s.threads[0].unchanged);
  EXPECT_EQ(s.threads[0].same_outer_frames, 1u);
  EXPECT_EQ(s.sample(), (Names{{"replaced", "Class.outer"}}));
  EXPECT_TRUE(s.threads[0].unchanged);
  // An output emptied by its owner (as after an error sample) is rebuilt.
  s.threads.clear();
  EXPECT_EQ(s.sample(), (Names{{"replaced", "Class.outer"}}));
  EXPECT_FALSE(s.threads[0].unchanged);
  EXPECT_EQ(s.threads[0].same_outer_frames, 0u);
  // Another output vector holds none of the previous frames.
  std::vector<PythonThreadStack> other(1);
  ASSERT_TRUE(s.reader.read(other, s.error)) << s.error;
  EXPECT_FALSE(other[0].unchanged);
  EXPECT_EQ(other[0].same_outer_frames, 0u);
  ASSERT_EQ(other[0].frames.size(), 2u);
  EXPECT_EQ(other[0].frames[1].function, "Class.outer");
}

// What the sampler's thread looks would say: each thread has run, or not.
class FakeActivity final : public ThreadActivity {
 public:
  std::set<int64_t> still;  // the threads that have not run
  std::vector<int64_t> asked;
  bool may_have_run(int64_t native_tid) override {
    asked.push_back(native_tid);
    return still.count(native_tid) == 0;
  }
};

// A thread that has not run since the last read keeps that read's stack:
// none of its frames is read, so a change the target made meanwhile (which
// a thread that did not run cannot make: here the test makes it) is not
// seen until the thread is said to have run.
TEST(PythonStackReader, KeepsTheStackOfAThreadThatHasNotRun) {
  ChunkedStack s;
  FakeActivity activity;
  const Names expected{{"Class.inner", "Class.outer"}};
  auto sample = [&](uint64_t* reads = nullptr) {
    const uint64_t before = s.memory.system_calls();
    if (!s.reader.read(s.threads, s.error, &activity)) return Names{{"error: " + s.error}};
    if (reads != nullptr) *reads = s.memory.system_calls() - before;
    Names names(1);
    for (const auto& frame : s.threads.at(0).frames) names[0].emplace_back(frame.function);
    return names;
  };
  EXPECT_EQ(sample(), expected);
  EXPECT_TRUE(activity.asked.empty()) << "the first read walks step by step, with nothing to keep";
  EXPECT_EQ(sample(), expected);
  EXPECT_EQ(activity.asked, std::vector<int64_t>{99});
  // The inner frame now runs other code, unseen while the thread is still.
  const uint64_t other_code = s.heap.code("other", "/app/b.py", 50);
  s.heap.frame_at(s.inner, other_code, s.outer, 2);
  activity.still = {99};
  uint64_t reads = 0;
  EXPECT_EQ(sample(&reads), expected);
  EXPECT_EQ(reads, 1u);
  EXPECT_TRUE(s.threads[0].unchanged);
  EXPECT_EQ(s.threads[0].same_outer_frames, 2u);
  EXPECT_TRUE(s.threads[0].holds_gil) << "the GIL is read at every sample";
  EXPECT_EQ(s.reader.stacks_kept_still(), 1u);
  activity.still = {};
  EXPECT_EQ(sample(), (Names{{"Class.other", "Class.outer"}}));
  EXPECT_FALSE(s.threads[0].unchanged);
  // Said still, but its innermost frame moved: the answer cannot be about
  // this stack, which is read.
  activity.still = {99};
  EXPECT_EQ(sample(), (Names{{"Class.other", "Class.outer"}}));
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, s.outer);
  EXPECT_EQ(sample(), (Names{{"Class.outer"}}));
  // Said still, but the thread state is another thread's now.
  s.heap.put(s.fake.cframe, kLayout.cframe.current_frame, s.inner);
  activity.still = {};
  EXPECT_EQ(sample(), (Names{{"Class.other", "Class.outer"}}));
  activity.still = {99, 100};
  s.heap.put<uint64_t>(s.fake.tstate, kLayout.thread.native_thread_id, 100);
  s.heap.frame_at(s.inner, s.inner_code, s.outer, 2);
  EXPECT_EQ(sample(), expected);
  EXPECT_EQ(s.threads[0].native_tid, 100);
  const uint64_t kept = s.reader.stacks_kept_still();
  // An output its owner emptied holds nothing to keep.
  s.threads.clear();
  EXPECT_EQ(sample(), expected);
  EXPECT_EQ(s.reader.stacks_kept_still(), kept);
}

// A kept stack's frames view the code cache's entries: once the cache has
// retired any (here: another thread's code object replaced at its address),
// a still thread's stack is read again rather than trusted to view live ones.
TEST(PythonStackReader, KeptStacksAreReadAgainOnceTheCodeCacheRetiredAnEntry) {
  ChunkedStack s;
  const uint64_t second = s.heap.alloc(512);
  const uint64_t second_cframe = s.heap.alloc(16);
  const uint64_t worker_code = s.heap.code("worker", "/app/w.py", 40);
  s.heap.put(second_cframe, kLayout.cframe.current_frame, s.heap.frame(worker_code, 0, 0));
  s.heap.put(second, kLayout.thread.interp, s.fake.interp);
  s.heap.put(second, kLayout.thread.frame, second_cframe);
  s.heap.put<uint64_t>(second, kLayout.thread.native_thread_id, 77);
  s.heap.put(s.fake.tstate, kLayout.thread.next, second);
  FakeActivity activity;
  auto sample = [&] {
    Names names;
    if (!s.reader.read(s.threads, s.error, &activity)) return Names{{"error: " + s.error}};
    for (const auto& thread : s.threads) {
      names.emplace_back();
      for (const auto& frame : thread.frames) names.back().emplace_back(frame.function);
    }
    return names;
  };
  const Names both{{"Class.inner", "Class.outer"}, {"Class.worker"}};
  EXPECT_EQ(sample(), both);
  EXPECT_EQ(sample(), both);
  activity.still = {99};
  EXPECT_EQ(sample(), both);
  EXPECT_EQ(s.reader.stacks_kept_still(), 1u);
  // The second thread's code object is replaced: its lookup retires the
  // entry, after the first thread's stack was kept in this read.
  s.heap.put(worker_code, kLayout.code.qualname, s.heap.str("replaced"));
  EXPECT_EQ(sample(), (Names{{"Class.inner", "Class.outer"}, {"replaced"}}));
  EXPECT_EQ(s.reader.stacks_kept_still(), 2u);
  // The first thread, still, is read again this once, then kept again.
  EXPECT_EQ(sample(), (Names{{"Class.inner", "Class.outer"}, {"replaced"}}));
  EXPECT_EQ(s.reader.stacks_kept_still(), 2u);
  EXPECT_EQ(sample(), (Names{{"Class.inner", "Class.outer"}, {"replaced"}}));
  EXPECT_EQ(s.reader.stacks_kept_still(), 3u);
}

// 3.11: a thread whose C frame moved (it returned to C and called back into
// Python) is walked afresh from its new C frame; the rest of the planned
// read still serves, instead of a walk of everything step by step.
TEST(PythonStackReader, AMovedCFrameIsWalkedAlone) {
  ChunkedStack s;
  s.sample();
  s.sample();
  uint64_t reads = 0;
  const uint64_t cframe = s.heap.alloc(16);
  s.heap.put(cframe, kLayout.cframe.current_frame, s.inner);
  s.heap.put(s.fake.tstate, kLayout.thread.frame, cframe);
  s.heap.frame_at(s.inner, s.inner_code, s.outer, 4);
  EXPECT_EQ(s.sample(&reads), (Names{{"Class.inner", "Class.outer"}}));
  // The planned call, the new C frame, the chunk and the code objects'
  // headers (those read ahead came before the frames): a step-by-step walk
  // takes the runtime, the interpreter and the thread state besides.
  EXPECT_EQ(reads, 4u);
  EXPECT_EQ(s.sample(&reads), (Names{{"Class.inner", "Class.outer"}}));
  EXPECT_EQ(reads, 1u) << "the new C frame is planned";
}

TEST(PythonStackReader, SeesThreadsComeAndGo) {
  ChunkedStack s;
  s.sample();
  s.sample();
  const uint64_t second = s.heap.alloc(512);
  s.heap.put(second, kLayout.thread.interp, s.fake.interp);
  s.heap.put<uint64_t>(second, kLayout.thread.thread_id, 5678);
  s.heap.put(s.fake.tstate, kLayout.thread.next, second);  // no C frame: no Python frames
  EXPECT_EQ(s.sample(), (Names{{"Class.inner", "Class.outer"}, {}}));
  EXPECT_EQ(s.threads[1].python_thread_id, 5678u);
  uint64_t reads = 0;
  EXPECT_EQ(s.sample(&reads), (Names{{"Class.inner", "Class.outer"}, {}}));
  EXPECT_EQ(reads, 1u);
  // The first thread exits, as tstate_delete_common does it: the list
  // starts at the second, and the state's chunk pointer is cleared.
  s.heap.put(s.fake.interp, kLayout.interpreter.threads_head, second);
  s.heap.put<uint64_t>(s.fake.tstate, kLayout.thread.datastack_chunk, 0);
  EXPECT_EQ(s.sample(), (Names{{}}));
  EXPECT_EQ(s.threads[0].python_thread_id, 5678u);
  // A thread state moved to another interpreter is not read as ours.
  s.heap.put(second, kLayout.thread.interp, s.heap.alloc(64));
  EXPECT_EQ(s.sample()[0][0].substr(0, 6), "error:");
  s.heap.put(second, kLayout.thread.interp, s.fake.interp);
  EXPECT_EQ(s.sample(), (Names{{}}));
  // No interpreter at all (finalized).
  s.heap.put<uint64_t>(s.fake.runtime, kLayout.runtime.interpreters_head, 0);
  EXPECT_EQ(s.sample(), Names{});
}

// 3.11 with one interpreter: the steady read leaves out the interpreter's
// thread head. A thread added at the head, as add_threadstate does it, is
// told by the old first thread's prev; the first thread removed, as
// tstate_delete_common does it, by its cleared chunk pointer.
TEST(PythonStackReader, ThreadsAddedAndRemovedAtTheHeadAreSeen) {
  ChunkedStack s;
  const Names one{{"Class.inner", "Class.outer"}};
  s.sample();
  s.sample();
  const uint64_t added = s.heap.alloc(512);
  const uint64_t chunk = s.heap.alloc(4096);
  const uint64_t cframe = s.heap.alloc(16);
  const uint64_t code = s.heap.code("worker", "/app/w.py", 40);
  s.heap.put(cframe, kLayout.cframe.current_frame, s.heap.frame_at(chunk + 64, code, 0, 0));
  s.heap.put(added, kLayout.thread.interp, s.fake.interp);
  s.heap.put(added, kLayout.thread.frame, cframe);
  s.heap.put(added, kLayout.thread.datastack_chunk, chunk);
  s.heap.put(added, kLayout.thread.next, s.fake.tstate);
  s.heap.put(s.fake.tstate, kLayout.thread.prev, added);
  s.heap.put(s.fake.interp, kLayout.interpreter.threads_head, added);
  const Names two{{"Class.worker"}, {"Class.inner", "Class.outer"}};
  EXPECT_EQ(s.sample(), two);
  uint64_t reads = 0;
  EXPECT_EQ(s.sample(&reads), two);
  EXPECT_EQ(reads, 1u);
  // The new first thread exits.
  s.heap.put(s.fake.interp, kLayout.interpreter.threads_head, s.fake.tstate);
  s.heap.put<uint64_t>(s.fake.tstate, kLayout.thread.prev, 0);
  s.heap.put<uint64_t>(added, kLayout.thread.datastack_chunk, 0);
  EXPECT_EQ(s.sample(), one);
  EXPECT_EQ(s.sample(&reads), one);
  EXPECT_EQ(reads, 1u);
  // Another added at the head, this time without Python frames yet (no
  // chunk): the interpreter is read again while it is first.
  const uint64_t bare = s.heap.alloc(512);
  s.heap.put(bare, kLayout.thread.interp, s.fake.interp);
  s.heap.put(bare, kLayout.thread.next, s.fake.tstate);
  s.heap.put(s.fake.tstate, kLayout.thread.prev, bare);
  s.heap.put(s.fake.interp, kLayout.interpreter.threads_head, bare);
  EXPECT_EQ(s.sample(), (Names{{}, {"Class.inner", "Class.outer"}}));
  s.heap.put(s.fake.interp, kLayout.interpreter.threads_head, s.fake.tstate);
  s.heap.put<uint64_t>(s.fake.tstate, kLayout.thread.prev, 0);
  EXPECT_EQ(s.sample(), one);
}

// 3.8-3.10 keep frames as heap objects, one read each step by step; the plan
// reads them all at once, and follows the chain as it is now.
TEST(PythonStackReader, FrameObjectsAreReadAheadAndRevalidated) {
  const PythonLayout& layout = kLayout3_10;
  const auto& f = layout.frame_object;
  FakeHeap heap(layout);
  auto frame_object = [&](uint64_t code, uint64_t back, int line) {
    uint64_t address = heap.alloc(512);
    heap.put(address, f.code, code);
    heap.put(address, f.back, back);
    heap.put(address, f.lineno, line);
    return address;
  };
  const uint64_t a = heap.code("a", "/app/a.py", 1), b = heap.code("b", "/app/a.py", 5);
  const uint64_t c = heap.code("c", "/app/a.py", 9);
  uint64_t bottom = frame_object(a, 0, 2);
  uint64_t middle = frame_object(b, bottom, 6);
  uint64_t top = frame_object(c, middle, 10);
  FakeHeap& h = heap;
  const uint64_t runtime = h.alloc(2048), interp = h.alloc(2048), tstate = h.alloc(512);
  h.put(runtime, layout.runtime.interpreters_head, interp);
  h.put(interp, layout.interpreter.threads_head, tstate);
  h.put(tstate, layout.thread.interp, interp);
  h.put(tstate, layout.thread.frame, top);
  ProcessMemory memory(::getpid());
  StackReader reader(memory, layout, runtime, 0);
  std::vector<PythonThreadStack> threads;
  std::string error;
  auto names = [&](uint64_t* reads) {
    const uint64_t before = memory.system_calls();
    std::vector<std::string> out;
    if (!reader.read(threads, error)) return std::vector<std::string>{"error: " + error};
    *reads = memory.system_calls() - before;
    for (const auto& frame : threads.at(0).frames) out.emplace_back(frame.function);
    return out;
  };
  uint64_t reads = 0;
  EXPECT_EQ(names(&reads), (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_GE(reads, 5u);
  EXPECT_EQ(names(&reads), (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_EQ(reads, 1u);
  EXPECT_EQ(threads[0].frames[1].line, 6);
  // The middle frame returned and its object was reused for a call of `a`.
  heap.put(middle, f.code, a);
  heap.put(middle, f.lineno, 3);
  EXPECT_EQ(names(&reads), (std::vector<std::string>{"c", "a", "a"}));
  EXPECT_EQ(threads[0].frames[1].line, 3);
  // A new frame on top, then the chain cut short.
  uint64_t newer = frame_object(b, top, 7);
  heap.put(tstate, layout.thread.frame, newer);
  EXPECT_EQ(names(&reads), (std::vector<std::string>{"b", "c", "a", "a"}));
  heap.put<uint64_t>(top, f.back, 0);
  EXPECT_EQ(names(&reads), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(names(&reads), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(reads, 1u);
}

// Random bytes in every structure, with pointers among them aimed at the
// other fake objects: the reader may fail, but never crash or hang.
TEST(PythonStackReader, SurvivesGarbage) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    FakeHeap heap;
    std::vector<uint64_t> blocks;
    for (int i = 0; i < 16; ++i) blocks.push_back(heap.alloc(1024));
    for (uint64_t block : blocks) {
      for (uint32_t offset = 0; offset < 1024; offset += 8) {
        uint64_t value = rng() % 3 == 0 ? blocks[rng() % blocks.size()] + (rng() % 64) * 8 : rng();
        heap.put(block, offset, value);
      }
    }
    ProcessMemory memory(::getpid());
    StackReader reader(memory, kLayout, blocks[0], 0);
    std::vector<PythonThreadStack> threads;
    std::string error;
    for (int i = 0; i < 3; ++i) reader.read(threads, error);
    // Changing bytes between samples exercises the read-ahead path's checks.
    for (int i = 0; i < 5; ++i) {
      heap.put(blocks[rng() % blocks.size()], static_cast<uint32_t>(rng() % 128) * 8,
               rng() % 2 == 0 ? blocks[rng() % blocks.size()] + (rng() % 64) * 8 : rng());
      reader.read(threads, error);
    }
  }
}

}  // namespace
}  // namespace stepscope::python
