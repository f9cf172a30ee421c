// Code objects of a target process, decoded once and revalidated on use.
//
// Decoding a code object (its name, file and line table) takes several
// reads; a stack of 30 frames touches the same few dozen code objects sample
// after sample. So decoded code objects are cached by address. An address can
// be reused after the code object is freed (a module reloaded, a lambda
// collected), so each use first re-reads the object's header (type, the
// pointers to its name, file and line table, its first line) and compares it
// with the cached copy: all the headers of one stack in one batched read.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/process/memory.hpp"
#include "collectors/python/layout.hpp"
#include "collectors/python/line_table.hpp"

namespace stepscope::python {

// The fields of a code object that identify it: if they are unchanged, the
// object at that address is the one we decoded (a reused address would hold
// other strings and tables). Compared field by field, since the bytes between
// them include counters that change as the code runs (co_warmup, ...).
struct CodeIdentity {
  uint64_t type = 0, filename = 0, name = 0, qualname = 0, linetable = 0;
  int firstlineno = 0, firsttraceable = 0, flags = 0;
  bool operator==(const CodeIdentity&) const = default;
};

struct CodeInfo {
  uint32_t id = 0;        // unique per cache, never reused: frames keys are built from it
  std::string function;   // co_qualname (3.11+) or co_name
  std::string file;       // co_filename
  LineTable lines;
  int first_traceable = 0;    // 3.11+: code units before it belong to the frame's prologue
  bool generator = false;     // a generator's, coroutine's or async generator's code (co_flags; not 3.13)
  CodeIdentity identity;      // compared on each use
};

class CodeCache {
 public:
  // `code_type` is the address of PyCode_Type in the target, 0 if unknown;
  // when known, objects of any other type are rejected.
  CodeCache(const ProcessMemory& memory, const PythonLayout& layout, uint64_t code_type);

  // Call at the start of each sample: frees entries that were replaced or
  // evicted during the previous one, whose strings callers may have viewed
  // until now.
  void begin_sample();

  // The entries for `addresses`, validated or decoded. False (with `error`)
  // when one cannot be read or is not a code object. With `use_prefetched`,
  // headers read ahead (below) serve for the addresses they cover: only for
  // frames read before them.
  bool lookup(std::span<const uint64_t> addresses, std::vector<const CodeInfo*>& out,
              std::string& error, bool use_prefetched = false);

  // Reading headers ahead, in the caller's batched read: appends one region
  // per code object the previous sample looked up (those stacks rarely
  // change). After the read, set_prefetched(true) makes them usable for
  // this sample; set_prefetched(false) when the read failed or was taken
  // too early to be trusted.
  void add_prefetch_regions(std::vector<ProcessMemory::Region>& regions);
  void set_prefetched(bool usable) { prefetched_ = usable; }

  size_t size() const { return entries_.size(); }
  // Moves on whenever an entry is retired (its views then last only until
  // the next sample): frames resolved at an earlier generation may view one.
  uint64_t generation() const { return generation_; }

 private:
  CodeIdentity identity_of(const char* header) const;
  const CodeInfo* validate(uint64_t address, const CodeIdentity& identity, std::string& error);
  std::unique_ptr<CodeInfo> decode(uint64_t address, const CodeIdentity& identity,
                                   std::string& error);
  bool read_string(uint64_t address, std::string& out);

  const ProcessMemory& memory_;
  const PythonLayout& layout_;
  uint64_t code_type_;
  uint32_t header_begin_ = 0;  // the span of PyCodeObject holding the identity
  uint32_t header_size_ = 0;
  uint32_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<CodeInfo>> entries_;
  std::vector<std::unique_ptr<CodeInfo>> retired_;
  uint64_t generation_ = 0;
  // Strings by address, with the header they were read with: names and
  // files are shared by many code objects.
  struct CachedString {
    std::string header;
    std::string text;
  };
  std::unordered_map<uint64_t, CachedString> strings_;
  const char* prefetched_header(uint64_t address) const;

  std::vector<uint64_t> unique_;  // per-lookup buffers, reused
  std::vector<uint32_t> positions_;  // addresses[i] is unique_[positions_[i]]
  std::vector<uint64_t> last_addresses_;  // what unique_ and positions_ were built for
  std::vector<const CodeInfo*> resolved_;
  std::vector<const char*> headers_;
  std::vector<char> scratch_;
  std::vector<ProcessMemory::Region> regions_;
  // Headers read ahead: the addresses looked up in the previous sample
  // (sorted) and their headers, header_size_ bytes each.
  std::vector<uint64_t> used_;  // this sample's lookups, deduplicated at the next begin_sample
  std::vector<uint64_t> prefetch_;
  std::vector<char> prefetch_headers_;
  bool prefetched_ = false;
};

}  // namespace stepscope::python
