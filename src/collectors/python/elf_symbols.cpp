#include "collectors/python/elf_symbols.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace stepscope {

// The open file and libelf's view of it; both live as long as the image.
struct ElfImage::Handle {
  int fd = -1;
  Elf* elf = nullptr;
  ~Handle() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
};

namespace {

constexpr uint64_t kPage = 4096;
uint64_t page_down(uint64_t value) { return value & ~(kPage - 1); }

// The load bias from the first mapping of the file that maps a PT_LOAD
// segment: mapped at `start`, the segment's page lies at page_down(p_vaddr)
// in the file's address space.
std::optional<uint64_t> compute_load_bias(Elf* elf, const std::string& path,
                                          const std::vector<MemoryMapping>& mappings) {
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return std::nullopt;
  for (const MemoryMapping& mapping : mappings) {
    if (mapping.path != path) continue;
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr) continue;
      if (phdr.p_type == PT_LOAD && page_down(phdr.p_offset) == mapping.offset) {
        return mapping.start - page_down(phdr.p_vaddr);
      }
    }
  }
  return std::nullopt;
}

// Fills the still-empty `found[k]` of each `names[k]` defined in one symbol
// table, in one pass. Names are compared against the string table's bytes
// directly: libelf's elf_strptr checks the section at each call, and was most
// of an attach's CPU on an unstripped libpython (15 000 symbols, 3 names).
void find_in_symbol_table(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                          std::span<const std::string_view> names,
                          std::vector<std::optional<uint64_t>>& found) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  Elf_Data* strings = elf_getdata(elf_getscn(elf, shdr.sh_link), nullptr);
  if (data == nullptr || strings == nullptr || strings->d_buf == nullptr || shdr.sh_entsize == 0) {
    return;
  }
  const std::string_view table(static_cast<const char*>(strings->d_buf), strings->d_size);
  size_t missing = static_cast<size_t>(std::count(found.begin(), found.end(), std::nullopt));
  const size_t count = shdr.sh_size / shdr.sh_entsize;
  for (size_t i = 0; i < count && missing > 0; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    if (sym.st_name == 0 || sym.st_shndx == SHN_UNDEF || sym.st_name >= table.size()) continue;
    const std::string_view rest = table.substr(sym.st_name);
    for (size_t k = 0; k < names.size(); ++k) {
      // The name, then its terminating NUL, both inside the table.
      if (found[k] || rest.size() <= names[k].size() || rest[names[k].size()] != '\0' ||
          !rest.starts_with(names[k])) {
        continue;
      }
      found[k] = sym.st_value;
      --missing;
    }
  }
}

// The section named `name`, or nullptr.
Elf_Scn* find_section(Elf* elf, std::string_view name, GElf_Shdr& shdr) {
  size_t names_index = 0;
  if (elf_getshdrstrndx(elf, &names_index) != 0) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* section_name = elf_strptr(elf, names_index, shdr.sh_name);
    if (section_name != nullptr && name == section_name) return scn;
  }
  return nullptr;
}

}  // namespace

ElfImage::ElfImage(std::string path, std::unique_ptr<Handle> handle, uint64_t load_bias)
    : path_(std::move(path)), handle_(std::move(handle)), load_bias_(load_bias) {}

ElfImage::~ElfImage() = default;

std::unique_ptr<ElfImage> ElfImage::open(pid_t pid, const std::string& path,
                                         const std::vector<MemoryMapping>& mappings,
                                         std::string* error) {
  auto fail = [&](std::string message) -> std::unique_ptr<ElfImage> {
    if (error != nullptr) *error = std::move(message);
    return nullptr;
  };
  elf_version(EV_CURRENT);  // libelf requires it before any other call
  auto handle = std::make_unique<Handle>();
  std::string through_root = fmt::format("/proc/{}/root{}", pid, path);
  handle->fd = ::open(through_root.c_str(), O_RDONLY | O_CLOEXEC);
  if (handle->fd < 0) {
    return fail(fmt::format("cannot open {}: {}", through_root, std::strerror(errno)));
  }
  handle->elf = elf_begin(handle->fd, ELF_C_READ_MMAP, nullptr);
  if (handle->elf == nullptr || elf_kind(handle->elf) != ELF_K_ELF) {
    return fail(fmt::format("{} is not an ELF file", path));
  }
  auto bias = compute_load_bias(handle->elf, path, mappings);
  if (!bias) return fail(fmt::format("{} is not mapped as an ELF image by process {}", path, pid));
  return std::unique_ptr<ElfImage>(new ElfImage(path, std::move(handle), *bias));
}

std::optional<uint64_t> ElfImage::symbol_address(std::string_view name) const {
  return symbol_addresses({&name, 1}).front();
}

std::vector<std::optional<uint64_t>> ElfImage::symbol_addresses(
    std::span<const std::string_view> names) const {
  std::vector<std::optional<uint64_t>> found(names.size());
  for (Elf64_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (Elf_Scn* scn = elf_nextscn(handle_->elf, nullptr); scn != nullptr;
         scn = elf_nextscn(handle_->elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != type) continue;
      find_in_symbol_table(handle_->elf, scn, shdr, names, found);
    }
  }
  for (std::optional<uint64_t>& address : found) {
    if (address) *address += load_bias_;
  }
  return found;
}

std::optional<ElfImage::Section> ElfImage::section(std::string_view name) const {
  GElf_Shdr shdr;
  if (find_section(handle_->elf, name, shdr) == nullptr || shdr.sh_addr == 0) return std::nullopt;
  return Section{shdr.sh_addr + load_bias_, shdr.sh_size};
}

std::string_view ElfImage::section_bytes(std::string_view name) const {
  GElf_Shdr shdr;
  Elf_Scn* scn = find_section(handle_->elf, name, shdr);
  if (scn == nullptr || shdr.sh_type == SHT_NOBITS) return {};
  Elf_Data* data = elf_rawdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return {};
  return {static_cast<const char*>(data->d_buf), data->d_size};
}

}  // namespace stepscope
