#include "collectors/native/symbol_index.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "collectors/native/native_test_programs.hpp"

namespace stepscope {
namespace {

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};

const Dwfl_Callbacks kCallbacks{&dwfl_linux_proc_find_elf, &dwfl_standard_find_debuginfo, nullptr, nullptr};

// The module whose file name ends in `suffix`, or null.
Dwfl_Module* module_named(Dwfl* dwfl, std::string_view suffix) {
  struct Search {
    std::string_view suffix;
    Dwfl_Module* found = nullptr;
  } search{suffix};
  dwfl_getmodules(
      dwfl,
      [](Dwfl_Module* module, void**, const char* name, Dwarf_Addr, void* arg) -> int {
        auto* s = static_cast<Search*>(arg);
        if (std::string_view(name).ends_with(s->suffix)) s->found = module;
        return DWARF_CB_OK;
      },
      &search, 0);
  return search.found;
}

// The files a process maps, as libdwfl reports them (no attaching).
std::unique_ptr<Dwfl, DwflDeleter> report_process(pid_t pid) {
  std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&kCallbacks));
  dwfl_report_begin(dwfl.get());
  EXPECT_EQ(dwfl_linux_proc_report(dwfl.get(), pid), 0);
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  return dwfl;
}

// The address of `function` in `module`, from libdwfl's own scan.
uint64_t address_of(Dwfl_Module* module, std::string_view function) {
  for (int i = 1; i < dwfl_module_getsymtab(module); ++i) {
    GElf_Sym symbol{};
    GElf_Addr address = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, nullptr, nullptr, nullptr);
    if (name != nullptr && function == name) return address;
  }
  return 0;
}

// Two processes of one program (a PIE, loaded at two addresses where the
// kernel randomizes them): one index, made from the first, names the
// second's functions at the second's addresses.
TEST(SymbolIndex, OneIndexServesEveryProcessMappingTheFile) {
  test::CompiledPrograms programs;
  std::string why;
  auto program = programs.compile("native_spin", test::kSpinProgram, "-fPIE -pie", why);
  if (program.empty()) GTEST_SKIP() << why;
  test::ChildProgram first(program), second(program);
  ASSERT_TRUE(first.wait_until_exec(program));
  ASSERT_TRUE(second.wait_until_exec(program));
  auto first_dwfl = report_process(first.pid()), second_dwfl = report_process(second.pid());
  Dwfl_Module* first_module = module_named(first_dwfl.get(), "/native_spin");
  Dwfl_Module* second_module = module_named(second_dwfl.get(), "/native_spin");
  ASSERT_NE(first_module, nullptr);
  ASSERT_NE(second_module, nullptr);

  SymbolIndexes indexes;
  std::shared_ptr<const SymbolIndex> index = indexes.of(first_module);
  EXPECT_EQ(indexes.of(second_module), index);
  EXPECT_EQ(indexes.made(), 1u);

  uint64_t first_inner = address_of(first_module, "inner"), second_inner = address_of(second_module, "inner");
  ASSERT_NE(second_inner, 0u);
  if (test::address_space_randomized()) {
    EXPECT_NE(first_inner, second_inner);
  }
  for (auto [module, inner] : {std::pair{first_module, first_inner}, std::pair{second_module, second_inner}}) {
    std::optional<FoundSymbol> found = index->find(module, inner + 1);
    ASSERT_TRUE(found);
    EXPECT_STREQ(found->name, "inner");
    EXPECT_EQ(found->start, inner);
    EXPECT_FALSE(index->find(module, 16));  // below every mapping
  }
}

// An index no unwinder holds any more is kept (the next epoch's DataLoader
// workers find it ready) until the kept ones pass their bound.
TEST(SymbolIndex, IndexesNoProcessUsesAreKeptUpToABound) {
  test::CompiledPrograms programs;
  std::string why;
  auto program = programs.compile("native_spin", test::kSpinProgram, "", why);
  if (program.empty()) GTEST_SKIP() << why;
  test::ChildProgram child(program);
  ASSERT_TRUE(child.wait_until_exec(program));
  auto dwfl = report_process(child.pid());
  Dwfl_Module* program_module = module_named(dwfl.get(), "/native_spin");
  Dwfl_Module* libc_module = module_named(dwfl.get(), "/libc.so.6");
  Dwfl_Module* loader_module = module_named(dwfl.get(), "/ld-linux-x86-64.so.2");
  ASSERT_NE(program_module, nullptr);
  ASSERT_NE(libc_module, nullptr);
  ASSERT_NE(loader_module, nullptr);

  SymbolIndexes roomy;
  roomy.of(program_module).reset();
  EXPECT_TRUE(roomy.of(program_module));
  EXPECT_EQ(roomy.made(), 1u);

  // Room for the program's few functions, not for libc's thousands: the
  // next index made lets libc's go, unused, and keeps the one held.
  SymbolIndexes tight(100);
  auto held = tight.of(program_module);
  tight.of(libc_module).reset();
  EXPECT_TRUE(tight.of(loader_module));
  EXPECT_EQ(tight.made(), 3u);
  EXPECT_EQ(tight.of(program_module), held);
  EXPECT_TRUE(tight.of(libc_module));
  EXPECT_EQ(tight.made(), 4u);
}

}  // namespace
}  // namespace stepscope
