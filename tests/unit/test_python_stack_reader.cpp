// The stack reader against interpreter structures faked in this process's own
// memory (read through process_vm_readv like any target), laid out with the
// generated 3.11 table: the normal case, and the torn or hostile memory it
// must turn into error samples rather than crashes or wrong stacks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collectors/python_offsets_generated.hpp"
#include "collectors/python_stack_reader.hpp"

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
    uint64_t address = alloc(c.code_adaptive + 16);
    put(address, c.name, str(name));
    put(address, c.qualname, str("Class." + name));
    put(address, c.filename, str(file));
    put(address, c.firstlineno, first_line);
    const char kNoColumnsEightUnits = static_cast<char>(0x80 | (13 << 3) | 7);
    put(address, c.linetable, bytes(std::string{kNoColumnsEightUnits, 2}));  // line delta +1
    return address;
  }
  uint64_t frame(uint64_t code, uint64_t previous, int instruction) {
    const auto& f = layout_.interpreter_frame;
    uint64_t address = alloc(f.size);
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
  }
}

}  // namespace
}  // namespace stepscope::python
