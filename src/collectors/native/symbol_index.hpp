// The function symbols of one mapped file sorted by address, for the native
// unwinder's names. libdwfl finds the symbol of an address by scanning every
// symbol of the file: libtorch_cpu.so has half a million, so each function
// seen for the first time would cost milliseconds; a search here costs a
// few hundred nanoseconds, after one pass over the table.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace stepscope {

struct FoundSymbol {
  const char* name;  // libdwfl's, valid while its Dwfl lives
  uint64_t start;
  uint64_t end;
};

class SymbolIndex {
 public:
  // Reads `module`'s symbol table (its ELF file, or its separate debug file)
  // once; `module` must outlive the index.
  explicit SymbolIndex(Dwfl_Module* module);

  // The function covering `address`: the one of the latest start, global
  // before weak before local among aliases. Nothing for an address between
  // functions, or covered only by a symbol without a size (an assembly label).
  std::optional<FoundSymbol> find(uint64_t address) const;

  // Every symbol of the table, functions or not.
  int symbol_count() const { return symbol_count_; }

 private:
  struct Entry {
    uint64_t start;
    uint32_t size;
    int32_t index;  // in libdwfl's numbering of the module's symbols
  };
  Dwfl_Module* module_;
  int symbol_count_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace stepscope
