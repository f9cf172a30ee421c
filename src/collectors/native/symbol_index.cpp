#include "collectors/native/symbol_index.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

namespace stepscope {

namespace {

// Symbols that name code: functions, indirect functions, and the untyped
// symbols hand-written assembly defines with a size.
bool names_code(const GElf_Sym& symbol) {
  const unsigned type = GELF_ST_TYPE(symbol.st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

// Lower is preferred among symbols of one address.
int binding_rank(const GElf_Sym& symbol) {
  switch (GELF_ST_BIND(symbol.st_info)) {
    case STB_GLOBAL: return 0;
    case STB_WEAK: return 1;
    default: return 2;
  }
}

// A function covers an address at most this far back from the latest start
// below it: nested symbols are rare, and the search stays short.
constexpr size_t kMostOverlaps = 16;

// What libdwfl adds to the file's addresses in this module (0 when the
// module has no ELF file, and then no symbols either).
Dwarf_Addr load_bias(Dwfl_Module* module) {
  Dwarf_Addr bias = 0;
  return dwfl_module_getelf(module, &bias) != nullptr ? bias : 0;
}

}  // namespace

SymbolIndex::SymbolIndex(Dwfl_Module* module) {
  const Dwarf_Addr bias = load_bias(module);
  const int count = dwfl_module_getsymtab(module);
  symbol_count_ = std::max(count, 0);
  std::vector<std::tuple<uint64_t, int, uint32_t, int32_t>> sorted;
  sorted.reserve(count > 0 ? static_cast<size_t>(count) : 0);
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol{};
    GElf_Addr address = 0;
    GElf_Word section = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, &section, nullptr, nullptr);
    if (name == nullptr || name[0] == '\0' || section == SHN_UNDEF || section == static_cast<GElf_Word>(-1) ||
        symbol.st_size == 0 || symbol.st_size > std::numeric_limits<uint32_t>::max() || !names_code(symbol)) {
      continue;
    }
    sorted.emplace_back(address - bias, binding_rank(symbol), static_cast<uint32_t>(symbol.st_size), i);
  }
  std::sort(sorted.begin(), sorted.end());
  entries_.reserve(sorted.size());
  for (const auto& [start, rank, size, index] : sorted) entries_.push_back(Entry{start, size, index});
}

std::optional<FoundSymbol> SymbolIndex::find(Dwfl_Module* module, uint64_t module_address) const {
  const Dwarf_Addr bias = load_bias(module);
  const uint64_t address = module_address - bias;
  auto after = std::upper_bound(entries_.begin(), entries_.end(), address,
                                [](uint64_t value, const Entry& entry) { return value < entry.start; });
  // Backwards from the latest start: among aliases (one start) the preferred
  // binding was sorted first, so the walk keeps the last covering one it meets.
  std::optional<FoundSymbol> found;
  uint64_t found_start = 0;
  for (size_t step = 0; after != entries_.begin() && step < kMostOverlaps; ++step) {
    const Entry& entry = *--after;
    if (found && entry.start != found_start) break;
    if (address - entry.start >= entry.size) continue;
    GElf_Sym symbol{};
    GElf_Addr start = 0;
    const char* name = dwfl_module_getsym_info(module, entry.index, &symbol, &start, nullptr, nullptr, nullptr);
    if (name == nullptr) continue;
    found = FoundSymbol{name, entry.start + bias, entry.start + bias + entry.size};
    found_start = entry.start;
  }
  return found;
}

std::shared_ptr<const SymbolIndex> SymbolIndexes::of(Dwfl_Module* module) {
  load_bias(module);  // the build-id is read with the file
  const unsigned char* bits = nullptr;
  GElf_Addr where = 0;
  const int length = dwfl_module_build_id(module, &bits, &where);
  if (length <= 0) {
    ++made_;
    return std::make_shared<const SymbolIndex>(module);
  }
  std::string build(reinterpret_cast<const char*>(bits), static_cast<size_t>(length));
  build += ':' + std::to_string(dwfl_module_getsymtab(module));  // which tables libdwfl found
  if (auto found = by_build_.find(build); found != by_build_.end()) return found->second;
  auto index = std::make_shared<const SymbolIndex>(module);
  ++made_;
  kept_functions_ += index->function_count();
  by_build_.emplace(std::move(build), index);
  if (kept_functions_ > most_kept_functions_) let_go_unused();
  return index;
}

void SymbolIndexes::let_go_unused() {
  std::erase_if(by_build_, [&](const auto& entry) {
    if (entry.second.use_count() > 1) return false;  // a process's unwinder holds it
    kept_functions_ -= entry.second->function_count();
    return true;
  });
}

}  // namespace stepscope
