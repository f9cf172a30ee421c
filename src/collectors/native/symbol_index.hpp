// The function symbols of one mapped file sorted by address, for the native
// unwinder's names. libdwfl finds the symbol of an address by scanning every
// symbol of the file: libtorch_cpu.so has half a million, so each function
// seen for the first time would cost milliseconds; a search here costs a
// few hundred nanoseconds, after one pass over the table (75 to 150 ms for
// libtorch_cpu.so), which SymbolIndexes makes once for all the processes
// that map the file.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepscope {

struct FoundSymbol {
  const char* name;  // libdwfl's, valid while the module's Dwfl lives
  uint64_t start;
  uint64_t end;
};

class SymbolIndex {
 public:
  // Reads `module`'s symbol table once. Addresses are kept as the file
  // has them (less the module's load bias) and symbols by their number in
  // libdwfl's table, so that the index serves any process mapping the file.
  explicit SymbolIndex(Dwfl_Module* module);

  // The function covering `address` of `module`, a module of the same file
  // in any process: the one of the latest start, global before weak before
  // local among aliases. Nothing for an address between functions, or
  // covered only by a symbol without a size (an assembly label).
  std::optional<FoundSymbol> find(Dwfl_Module* module, uint64_t address) const;

  // Every symbol of the table, functions or not.
  int symbol_count() const { return symbol_count_; }
  // The functions indexed.
  size_t function_count() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t start;  // in the file's addresses
    uint32_t size;
    int32_t index;  // in libdwfl's numbering of the module's symbols
  };
  int symbol_count_ = 0;
  std::vector<Entry> entries_;
};

// The symbol indexes of the files a tree of processes maps, one per build of
// a file (its GNU build-id and libdwfl's symbol count), shared by every
// process that maps it: a DataLoader worker, or a rank, finds libtorch's
// ready. A file without a build-id gets an index of its own per module.
// Not thread-safe: one sampler thread uses it.
class SymbolIndexes {
 public:
  // Indexes no unwinder holds any more are kept while all kept together hold
  // fewer functions than `most_kept_functions` (16 bytes each): a file that
  // only DataLoader workers run in is not indexed again for each epoch's
  // new workers.
  explicit SymbolIndexes(size_t most_kept_functions = size_t{2} << 20) : most_kept_functions_(most_kept_functions) {}

  std::shared_ptr<const SymbolIndex> of(Dwfl_Module* module);

  // Indexes made (not found ready) so far.
  uint64_t made() const { return made_; }

 private:
  void let_go_unused();

  size_t most_kept_functions_;
  std::map<std::string, std::shared_ptr<const SymbolIndex>> by_build_;
  size_t kept_functions_ = 0;
  uint64_t made_ = 0;
};

}  // namespace stepscope
