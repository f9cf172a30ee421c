#include "collectors/native/native_unwinder.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collectors/native/native_test_programs.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kMillisecond = 1'000'000;
constexpr uint32_t kStackBytes = 16 * 1024;

// The index of the first frame named `function` at or after `from`; frames.size() when none.
size_t find_frame(const std::vector<NativeFrame>& frames, std::string_view function, size_t from = 0) {
  for (size_t i = from; i < frames.size(); ++i) {
    if (frames[i].function == function) return i;
  }
  return frames.size();
}

std::string describe(const std::vector<NativeFrame>& frames) {
  std::string text;
  for (const NativeFrame& frame : frames) {
    text += "\n  " + std::string(frame.function.empty() ? "?" : frame.function) + " in " +
            std::string(frame.module.empty() ? "?" : frame.module);
  }
  return text;
}

// Expects `functions` among the frames in this order (innermost first), each
// in a module whose path ends in `module`; the index of the last.
size_t expect_in_order(const std::vector<NativeFrame>& frames, const std::vector<std::string_view>& functions,
                       std::string_view module) {
  size_t at = 0;
  for (std::string_view function : functions) {
    size_t found = find_frame(frames, function, at);
    EXPECT_LT(found, frames.size()) << function << " missing after frame " << at << ":" << describe(frames);
    if (found == frames.size()) return found;
    EXPECT_TRUE(frames[found].module.ends_with(module)) << frames[found].module;
    at = found + 1;
  }
  return at - 1;
}

// Samples `pid` until `unwinder` puts its innermost frame in `function` (the
// child may still be starting): that sample, its frames in `frames`; false at
// the timeout, `frames` the last sample's.
bool sample_in(PerfStackSampler& sampler, pid_t pid, NativeUnwinder& unwinder, std::string_view function,
               UserStackSample& sample, std::vector<NativeFrame>& frames) {
  return test::sample_until(
      sampler, pid, 5s,
      [&](const UserStackSample& taken) {
        unwinder.unwind(taken, frames);
        return !frames.empty() && frames[0].function == function;
      },
      sample);
}

// The spinning program, sampled: what each test starts from.
class NativeUnwinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    program_ = programs_.compile("native_spin", test::kSpinProgram, "", why);
    if (program_.empty()) GTEST_SKIP() << why;
    child_ = std::make_unique<test::ChildProgram>(program_);
    ASSERT_TRUE(child_->wait_until_exec(program_));
    sampler_ = PerfStackSampler::open(child_->pid(), kMillisecond, kStackBytes, why);
    if (!sampler_) GTEST_SKIP() << "perf_event_open refused here: " << why;
  }

  // A sample whose pc lies in `inner` (the child may still be starting).
  UserStackSample sample_in_inner(NativeUnwinder& unwinder) {
    UserStackSample sample;
    std::vector<NativeFrame> frames;
    bool found = sample_in(*sampler_, child_->pid(), unwinder, "inner", sample, frames);
    EXPECT_TRUE(found) << "no sample in inner; the last one's frames:" << describe(frames);
    return sample;
  }

  test::CompiledPrograms programs_;
  std::filesystem::path program_;
  std::unique_ptr<test::ChildProgram> child_;
  std::unique_ptr<PerfStackSampler> sampler_;
};

TEST_F(NativeUnwinderTest, UnwindsAProgramWithoutFramePointersToLibc) {
  NativeUnwinder unwinder(child_->pid());
  UserStackSample sample = sample_in_inner(unwinder);
  std::vector<NativeFrame> frames;
  UnwindResult result = unwinder.unwind(sample, frames);
  EXPECT_TRUE(result.complete) << result.stop_reason << describe(frames);
  size_t main_at = expect_in_order(frames, {"inner", "middle", "outer", "main"}, "/native_spin");
  ASSERT_LT(main_at, frames.size());
  EXPECT_EQ(main_at, 3u) << describe(frames);
  bool libc_start = std::any_of(frames.begin() + static_cast<ptrdiff_t>(main_at) + 1, frames.end(), [](auto& f) {
    return f.function == "__libc_start_call_main" || f.function == "__libc_start_main";
  });
  EXPECT_TRUE(libc_start) << describe(frames);  // __libc_start_main without its @@GLIBC_2.34
  for (const NativeFrame& frame : frames) {
    EXPECT_FALSE(frame.python_eval);
    EXPECT_EQ(frame.function.find('@'), std::string_view::npos) << frame.function;
  }
  std::string status;
  EXPECT_TRUE(test::runs_untraced(child_->pid(), status)) << status;
}

TEST_F(NativeUnwinderTest, AnUnwindOfTheSameSampleAgainGivesTheSameFrames) {
  NativeUnwinder unwinder(child_->pid());
  UserStackSample sample = sample_in_inner(unwinder);
  std::vector<NativeFrame> first, second;
  unwinder.unwind(sample, first);
  unwinder.unwind(sample, second);
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].pc, second[i].pc);
    EXPECT_EQ(first[i].function.data(), second[i].function.data());  // the cached, interned names
  }
}

TEST_F(NativeUnwinderTest, AnEmptyStackCopyGivesTheFirstFrameOnly) {
  NativeUnwinder unwinder(child_->pid());
  UserStackSample sample = sample_in_inner(unwinder);
  sample.stack.clear();
  std::vector<NativeFrame> frames;
  UnwindResult result = unwinder.unwind(sample, frames);
  EXPECT_FALSE(result.complete);
  EXPECT_NE(result.stop_reason.find("beyond the 0 bytes copied"), std::string::npos) << result.stop_reason;
  ASSERT_EQ(frames.size(), 1u) << describe(frames);
  EXPECT_EQ(frames[0].function, "inner");
}

TEST_F(NativeUnwinderTest, AShortStackCopyKeepsTheFramesItHolds) {
  NativeUnwinder unwinder(child_->pid());
  UserStackSample sample = sample_in_inner(unwinder);
  sample.stack.resize(8);  // inner's return address into middle, nothing of middle's frame
  std::vector<NativeFrame> frames;
  UnwindResult result = unwinder.unwind(sample, frames);
  EXPECT_FALSE(result.complete);
  EXPECT_NE(result.stop_reason.find("beyond the 8 bytes copied"), std::string::npos) << result.stop_reason;
  ASSERT_EQ(frames.size(), 2u) << describe(frames);
  EXPECT_EQ(frames[1].function, "middle");
}

TEST_F(NativeUnwinderTest, RegistersPointingNowhereStopTheWalkWithAReason) {
  NativeUnwinder unwinder(child_->pid());
  std::mt19937_64 random(31);
  std::vector<NativeFrame> frames;
  for (int round = 0; round < 200; ++round) {
    UserStackSample sample;
    sample.tid = child_->pid();
    for (uint64_t& reg : sample.regs) reg = round == 0 ? 0 : random();
    if (round % 2 == 1) {  // a stack of garbage where rsp says
      sample.stack.resize(4096);
      for (char& byte : sample.stack) byte = static_cast<char>(random());
    }
    UnwindResult result = unwinder.unwind(sample, frames);
    EXPECT_LE(frames.size(), 512u);
    if (!result.complete) {
      EXPECT_FALSE(result.stop_reason.empty());
    }
    if (round == 0) {
      EXPECT_FALSE(result.complete);
      EXPECT_NE(result.stop_reason.find("no mapped file"), std::string::npos) << result.stop_reason;
    }
  }
}

TEST_F(NativeUnwinderTest, ASelfReturningStackStopsAt512Frames) {
  NativeUnwinder unwinder(child_->pid());
  UserStackSample sample = sample_in_inner(unwinder);
  // Every word a return address into inner, whose frame is just that word:
  // each caller is inner again, one word higher, for 8,000 frames.
  uint64_t return_address = sample.regs[kDwarfRip] + 1;
  sample.stack.resize(64 * 1024);
  for (size_t at = 0; at + 8 <= sample.stack.size(); at += 8) {
    std::memcpy(sample.stack.data() + at, &return_address, 8);
  }
  std::vector<NativeFrame> frames;
  UnwindResult result = unwinder.unwind(sample, frames);
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(frames.size(), 512u);
  EXPECT_NE(result.stop_reason.find("512"), std::string::npos) << result.stop_reason;
}

// A second process of the same program names its own frames with the
// symbol indexes the first made: the program and libc are loaded at other
// addresses there (ASLR), which the indexes keep apart. (That an index is
// made once per file: test_symbol_index.cpp.)
TEST_F(NativeUnwinderTest, AnotherProcessNamesItsFramesWithTheSharedSymbolIndexes) {
  auto indexes = std::make_shared<SymbolIndexes>();
  NativeUnwinder first(child_->pid(), indexes);
  std::vector<NativeFrame> first_frames;
  first.unwind(sample_in_inner(first), first_frames);

  test::ChildProgram other_child(program_);
  ASSERT_TRUE(other_child.wait_until_exec(program_));
  std::string why;
  auto other_sampler = PerfStackSampler::open(other_child.pid(), kMillisecond, kStackBytes, why);
  ASSERT_TRUE(other_sampler) << why;
  NativeUnwinder other(other_child.pid(), indexes);
  UserStackSample sample;
  std::vector<NativeFrame> frames;
  ASSERT_TRUE(sample_in(*other_sampler, other_child.pid(), other, "inner", sample, frames)) << describe(frames);
  expect_in_order(frames, {"inner", "middle", "outer", "main"}, "/native_spin");
  EXPECT_TRUE(std::any_of(frames.begin(), frames.end(), [](auto& f) { return f.function == "__libc_start_call_main"; }))
      << describe(frames);
  // The return address into main: at the same offset in the program, so
  // apart only where the two were loaded apart.
  size_t main_at = find_frame(frames, "main"), first_main_at = find_frame(first_frames, "main");
  ASSERT_LT(first_main_at, first_frames.size());
  if (test::address_space_randomized()) {
    EXPECT_NE(frames[main_at].pc, first_frames[first_main_at].pc);
  }
}

TEST(NativeUnwinder, NamesCppFunctionsDemangled) {
  constexpr const char* kCppProgram = R"CPP(
namespace spin {
volatile unsigned long sink;
volatile int stop;
__attribute__((noinline)) void inner(int step) { while (!stop) sink += step; }
template <typename T> __attribute__((noinline)) void outer(T step) { inner(static_cast<int>(step)); sink += 1; }
}  // namespace spin
int main() { spin::outer<long>(3); return 0; }
)CPP";
  test::CompiledPrograms programs;
  std::string why;
  auto program = programs.compile("native_cpp", kCppProgram, "-x c++", why);
  if (program.empty()) GTEST_SKIP() << why;
  test::ChildProgram child(program);
  ASSERT_TRUE(child.wait_until_exec(program));
  auto sampler = PerfStackSampler::open(child.pid(), kMillisecond, kStackBytes, why);
  if (!sampler) GTEST_SKIP() << "perf_event_open refused here: " << why;
  NativeUnwinder unwinder(child.pid());
  UserStackSample sample;
  std::vector<NativeFrame> frames;
  ASSERT_TRUE(sample_in(*sampler, child.pid(), unwinder, "spin::inner(int)", sample, frames)) << describe(frames);
  expect_in_order(frames, {"spin::inner(int)", "void spin::outer<long>(long)", "main"}, "/native_cpp");
}

TEST(NativeUnwinder, FindsALibraryLoadedAfterItWasMade) {
  test::CompiledPrograms programs;
  std::string why;
  auto library = programs.compile("libnative_spin.so", test::kSpinLibrary, "-shared -fPIC", why);
  auto program = library.empty() ? library : programs.compile("native_dlopen", test::kDlopenProgram, "-ldl", why);
  if (program.empty()) GTEST_SKIP() << why;
  test::ChildProgram child(program, {library.string()});
  ASSERT_TRUE(child.wait_until_exec(program));
  NativeUnwinder unwinder(child.pid());  // before the library is loaded
  auto sampler = PerfStackSampler::open(child.pid(), kMillisecond, kStackBytes, why);
  if (!sampler) GTEST_SKIP() << "perf_event_open refused here: " << why;
  child.release();

  UserStackSample sample;
  std::vector<NativeFrame> frames;
  ASSERT_TRUE(sample_in(*sampler, child.pid(), unwinder, "lib_inner", sample, frames))
      << "the library's frames stayed unnamed:" << describe(frames);
  expect_in_order(frames, {"lib_inner", "lib_outer"}, "/libnative_spin.so");
  expect_in_order(frames, {"lib_outer", "main"}, "");
  EXPECT_TRUE(frames[find_frame(frames, "main")].module.ends_with("/native_dlopen"));
}

// Where `symbol` lies in `library`'s file: its address, loaded here, less
// the start of the segment that holds it, plus that segment's file offset.
std::optional<uint64_t> file_offset_of(const std::filesystem::path& library, const char* symbol) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::nullopt;
  struct Search {
    uintptr_t address = 0;
    std::optional<uint64_t> offset;
  } search{reinterpret_cast<uintptr_t>(::dlsym(handle, symbol)), std::nullopt};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        auto* found = static_cast<Search*>(arg);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (segment.p_type == PT_LOAD && found->address >= start && found->address < start + segment.p_filesz) {
            found->offset = found->address - start + segment.p_offset;
            return 1;
          }
        }
        return 0;
      },
      &search);
  ::dlclose(handle);
  return search.address == 0 ? std::nullopt : search.offset;
}

// The maps read while a data file was mapped, then a library mapped in its
// place: the unwinder must not go on taking the library's code for the
// data file (dlopen maps /etc/ld.so.cache only while it runs).
TEST(NativeUnwinder, FindsALibraryMappedWhereAnotherFileWas) {
  test::CompiledPrograms programs;
  std::string why;
  auto library = programs.compile("libnative_spin.so", test::kSpinLibrary, "-shared -fPIC", why);
  auto program = library.empty() ? library : programs.compile("native_remap", test::kRemapProgram, "", why);
  if (program.empty()) GTEST_SKIP() << why;
  std::optional<uint64_t> offset = file_offset_of(library, "lib_forever");
  ASSERT_TRUE(offset.has_value()) << ::dlerror();
  auto data = library.parent_path() / "data.bin";
  std::ofstream(data) << std::string(4096, 'x');
  test::ChildProgram child(program, {data.string(), library.string(), fmt::format("{:x}", *offset)});
  ASSERT_TRUE(child.wait_until_exec(program));
  ASSERT_TRUE(child.wait_until_mapped(data));
  NativeUnwinder unwinder(child.pid());  // while the data file is mapped
  auto sampler = PerfStackSampler::open(child.pid(), kMillisecond, kStackBytes, why);
  if (!sampler) GTEST_SKIP() << "perf_event_open refused here: " << why;
  child.release();

  UserStackSample sample;
  std::vector<NativeFrame> frames;
  ASSERT_TRUE(sample_in(*sampler, child.pid(), unwinder, "lib_forever", sample, frames))
      << "the library's code was taken for another file's:" << describe(frames);
  EXPECT_TRUE(frames[0].module.ends_with("/libnative_spin.so")) << frames[0].module;
}

TEST(NativeUnwinder, AProcessGoneIsAnInputError) {
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  EXPECT_THROW(NativeUnwinder{gone}, InputError);
}

}  // namespace
}  // namespace stepscope
