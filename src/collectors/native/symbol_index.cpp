#include "collectors/native/symbol_index.hpp"

#include <algorithm>
#include <limits>
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

}  // namespace

SymbolIndex::SymbolIndex(Dwfl_Module* module) : module_(module) {
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
    sorted.emplace_back(address, binding_rank(symbol), static_cast<uint32_t>(symbol.st_size), i);
  }
  std::sort(sorted.begin(), sorted.end());
  entries_.reserve(sorted.size());
  for (const auto& [start, rank, size, index] : sorted) entries_.push_back(Entry{start, size, index});
}

std::optional<FoundSymbol> SymbolIndex::find(uint64_t address) const {
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
    const char* name = dwfl_module_getsym_info(module_, entry.index, &symbol, &start, nullptr, nullptr, nullptr);
    if (name == nullptr) continue;
    found = FoundSymbol{name, entry.start, entry.start + entry.size};
    found_start = entry.start;
  }
  return found;
}

}  // namespace stepscope
