// Symbols and sections of an ELF file mapped into another process, at the
// addresses they have in that process.
//
// The file is opened through /proc/PID/root/PATH, so a process in another
// mount namespace (a container) is read from its own files, not from ours.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/process/memory_maps.hpp"

namespace stepscope {

class ElfImage {
 public:
  // Opens `path` as mapped by `pid`; `mappings` are the process's mappings,
  // of which those of `path` give the load bias. nullptr with `error` set
  // when the file cannot be opened, is not ELF or is not mapped.
  static std::unique_ptr<ElfImage> open(pid_t pid, const std::string& path,
                                        const std::vector<MemoryMapping>& mappings,
                                        std::string* error);
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;

  const std::string& path() const { return path_; }

  // What to add to an address in the file to get the address in the process
  // (0 for a non-PIE executable).
  uint64_t load_bias() const { return load_bias_; }

  // The process address of the symbol `name`, searched in .symtab then
  // .dynsym (stripped files keep only the latter).
  std::optional<uint64_t> symbol_address(std::string_view name) const;
  // The same for several names at once, in one pass over each table:
  // result[k] is the address of names[k].
  std::vector<std::optional<uint64_t>> symbol_addresses(std::span<const std::string_view> names) const;

  struct Section {
    uint64_t address = 0;  // in the process
    uint64_t size = 0;
  };
  // The section `name` (e.g. ".PyRuntime"), placed in the process.
  std::optional<Section> section(std::string_view name) const;

  // The file contents of section `name` (e.g. ".rodata"); empty when the
  // section is absent or occupies no file space.
  std::string_view section_bytes(std::string_view name) const;

 private:
  struct Handle;
  ElfImage(std::string path, std::unique_ptr<Handle> handle, uint64_t load_bias);

  std::string path_;
  std::unique_ptr<Handle> handle_;
  uint64_t load_bias_ = 0;
};

}  // namespace stepscope
