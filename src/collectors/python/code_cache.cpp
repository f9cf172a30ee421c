#include "collectors/python/code_cache.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "collectors/python/strings.hpp"

namespace stepscope::python {

namespace {

// Entries kept before the cache starts over: a bound on memory for targets
// that generate code endlessly (exec, eval, lambdas in loops).
constexpr size_t kMaxEntries = 1 << 16;
constexpr size_t kMaxStrings = 1 << 16;
// Code objects whose headers are read ahead at most (a sample's stacks hold
// far fewer; a plan larger than a few read_many batches is not worth it).
constexpr size_t kMaxPrefetched = 512;

}  // namespace

CodeCache::CodeCache(const ProcessMemory& memory, const PythonLayout& layout, uint64_t code_type)
    : memory_(memory), layout_(layout), code_type_(code_type) {
  const auto& c = layout.code;
  uint32_t begin = UINT32_MAX, end = 0;
  auto cover = [&](uint32_t offset, uint32_t size) {
    if (offset == kAbsent) return;
    begin = std::min(begin, offset);
    end = std::max(end, offset + size);
  };
  cover(layout.object.type, 8);
  cover(c.filename, 8);
  cover(c.name, 8);
  cover(c.qualname, 8);
  cover(c.linetable, 8);
  cover(c.firstlineno, 4);
  cover(c.flags, 4);
  cover(c.firsttraceable, 4);
  header_begin_ = begin;
  header_size_ = end - begin;
}

CodeIdentity CodeCache::identity_of(const char* header) const {
  auto field = [&](uint32_t offset, auto& value) {
    if (offset != kAbsent) std::memcpy(&value, header + (offset - header_begin_), sizeof value);
  };
  CodeIdentity identity;
  field(layout_.object.type, identity.type);
  field(layout_.code.filename, identity.filename);
  field(layout_.code.name, identity.name);
  field(layout_.code.qualname, identity.qualname);
  field(layout_.code.linetable, identity.linetable);
  field(layout_.code.firstlineno, identity.firstlineno);
  field(layout_.code.flags, identity.flags);
  field(layout_.code.firsttraceable, identity.firsttraceable);
  return identity;
}

void CodeCache::begin_sample() {
  retired_.clear();
  if (entries_.size() > kMaxEntries) {
    for (auto& [address, entry] : entries_) retired_.push_back(std::move(entry));
    entries_.clear();
    ++generation_;
  }
  if (strings_.size() > kMaxStrings) strings_.clear();
  // The code objects of the last sample are the ones to read ahead now.
  std::sort(used_.begin(), used_.end());
  used_.erase(std::unique(used_.begin(), used_.end()), used_.end());
  prefetch_.swap(used_);
  if (prefetch_.size() > kMaxPrefetched) prefetch_.clear();
  used_.clear();
  prefetched_ = false;
}

void CodeCache::add_prefetch_regions(std::vector<ProcessMemory::Region>& regions) {
  prefetch_headers_.resize(prefetch_.size() * header_size_);
  for (size_t i = 0; i < prefetch_.size(); ++i) {
    regions.push_back(
        {prefetch_[i] + header_begin_, prefetch_headers_.data() + i * header_size_, header_size_});
  }
}

const char* CodeCache::prefetched_header(uint64_t address) const {
  if (!prefetched_) return nullptr;
  auto it = std::lower_bound(prefetch_.begin(), prefetch_.end(), address);
  if (it == prefetch_.end() || *it != address) return nullptr;
  return prefetch_headers_.data() + (it - prefetch_.begin()) * header_size_;
}

bool CodeCache::lookup(std::span<const uint64_t> addresses, std::vector<const CodeInfo*>& out,
                       std::string& error, bool use_prefetched) {
  // Each distinct code object once (recursion repeats them): every region
  // costs the kernel a page lookup. A stack made of the same code objects
  // as the last lookup's (the common case) reuses that work.
  if (!std::equal(addresses.begin(), addresses.end(), last_addresses_.begin(),
                  last_addresses_.end())) {
    last_addresses_.assign(addresses.begin(), addresses.end());
    unique_.assign(addresses.begin(), addresses.end());
    std::sort(unique_.begin(), unique_.end());
    unique_.erase(std::unique(unique_.begin(), unique_.end()), unique_.end());
    positions_.clear();
    for (uint64_t address : addresses) {
      positions_.push_back(static_cast<uint32_t>(
          std::lower_bound(unique_.begin(), unique_.end(), address) - unique_.begin()));
    }
  }
  // Headers read ahead where there are, the others in one batched read.
  scratch_.resize(unique_.size() * header_size_);
  headers_.resize(unique_.size());
  regions_.clear();
  for (size_t i = 0; i < unique_.size(); ++i) {
    headers_[i] = use_prefetched ? prefetched_header(unique_[i]) : nullptr;
    if (headers_[i] == nullptr) {
      headers_[i] = scratch_.data() + i * header_size_;
      regions_.push_back({unique_[i] + header_begin_, scratch_.data() + i * header_size_, header_size_});
    }
  }
  if (!memory_.read_many(regions_)) {
    error = "cannot read the code objects of the stack";
    return false;
  }
  resolved_.clear();
  for (size_t i = 0; i < unique_.size(); ++i) {
    const CodeInfo* info = validate(unique_[i], identity_of(headers_[i]), error);
    if (info == nullptr) return false;
    resolved_.push_back(info);
  }
  used_.insert(used_.end(), unique_.begin(), unique_.end());
  out.clear();
  for (uint32_t position : positions_) out.push_back(resolved_[position]);
  return true;
}

const CodeInfo* CodeCache::validate(uint64_t address, const CodeIdentity& identity,
                                    std::string& error) {
  auto it = entries_.find(address);
  if (it != entries_.end() && it->second->identity == identity) return it->second.get();
  std::unique_ptr<CodeInfo> entry = decode(address, identity, error);
  if (!entry) return nullptr;
  const CodeInfo* info = entry.get();
  if (it != entries_.end()) {
    retired_.push_back(std::move(it->second));  // a frame of this sample may still view it
    ++generation_;
    it->second = std::move(entry);
  } else {
    entries_.emplace(address, std::move(entry));
  }
  return info;
}

std::unique_ptr<CodeInfo> CodeCache::decode(uint64_t address, const CodeIdentity& identity,
                                            std::string& error) {
  if (code_type_ != 0 && identity.type != code_type_) {
    error = fmt::format("the object at 0x{:x} is not a code object", address);
    return nullptr;
  }
  auto entry = std::make_unique<CodeInfo>();
  const uint64_t function = layout_.code.qualname != kAbsent ? identity.qualname : identity.name;
  std::string table;
  if (!read_string(function, entry->function) || !read_string(identity.filename, entry->file) ||
      !read_python_bytes(memory_, layout_, identity.linetable, table)) {
    error = fmt::format("cannot read the code object at 0x{:x}", address);
    return nullptr;
  }
  entry->id = next_id_++;
  entry->lines = LineTable(layout_.line_table, table, identity.firstlineno);
  entry->first_traceable = identity.firsttraceable;
  // CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR: the
  // same bits in every version.
  entry->generator = (identity.flags & (0x20 | 0x80 | 0x100 | 0x200)) != 0;
  entry->identity = identity;
  return entry;
}

bool CodeCache::read_string(uint64_t address, std::string& out) {
  StrHeader header;
  if (!read_str_header(memory_, layout_, address, header)) return false;
  // The type, length, hash and state identify the str; the reference count
  // before them changes all the time.
  const uint32_t begin = layout_.object.type;
  const uint32_t end = layout_.unicode.state + 4;
  std::string identity = header.bytes.substr(begin, end - begin);
  auto it = strings_.find(address);
  if (it != strings_.end() && it->second.header == identity) {
    out = it->second.text;  // the same str object, and strs are immutable
    return true;
  }
  if (!read_str_text(memory_, layout_, address, header, out)) return false;
  strings_[address] = CachedString{std::move(identity), out};
  return true;
}

}  // namespace stepscope::python
