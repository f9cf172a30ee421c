// The order of keys a profiler writes its events in, learned as events are
// read, so the plain event reader can check a predicted key with one compare
// instead of scanning for its closing quote. Kineto writes every event of a
// kind with the same keys in the same order ("ph", "cat", "name", "pid",
// ...; a kernel's 14 args), and each key's scan sits on the chain of
// dependent loads that reading an event is: a prediction that is checked
// and then branched on lets the CPU run ahead instead.
//
// Only an exact byte match counts (quote, key, quote, colon, as learned from
// a key the reader has validated), so a prediction never changes what is
// read, only how fast.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stepscope {

// The keys of one kind of object, by their place in it.
class KeyOrder {
 public:
  // Keys are predicted at the first kPlaces places; `"key":` must fit in
  // kPatternBytes bytes.
  static constexpr size_t kPlaces = 16;
  static constexpr size_t kPatternBytes = 16;

  // Whether the bytes at p are the key learned for `place` with its colon;
  // if so its body (a view into p's text) and the position after the colon.
  // `available` bytes lie at p, and kPatternBytes may be loaded from it.
  const char* match(size_t place, const char* p, size_t available, std::string_view& key) const {
    if (place >= kPlaces) return nullptr;
    const Pattern& pattern = patterns_[place];
    if (pattern.size == 0 || available < pattern.size || !same_bytes(p, pattern)) return nullptr;
    key = std::string_view(p + 1, pattern.size - 3);
    return p + pattern.size;
  }

  // Remembers `"key":` (the bytes at `quoted`, `size` long, checked by the
  // caller) as the key at `place`.
  void learn(size_t place, const char* quoted, size_t size) {
    if (place >= kPlaces || size > kPatternBytes) return;
    Pattern& pattern = patterns_[place];
    std::memset(pattern.bytes, 0, sizeof(pattern.bytes));
    std::memcpy(pattern.bytes, quoted, size);
    pattern.size = static_cast<uint8_t>(size);
  }

 private:
  struct Pattern {
    alignas(16) char bytes[kPatternBytes];
    uint8_t size = 0;  // 0: nothing learned
  };

  static bool same_bytes(const char* p, const Pattern& pattern) {
#if defined(__SSE2__)
    __m128i text = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i expected = _mm_load_si128(reinterpret_cast<const __m128i*>(pattern.bytes));
    unsigned wanted = (1u << pattern.size) - 1;
    return (static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(text, expected))) & wanted) == wanted;
#else
    return std::memcmp(p, pattern.bytes, pattern.size) == 0;
#endif
  }

  std::array<Pattern, kPlaces> patterns_{};
};

// The key orders of a trace: one for events, one for the args of each of
// the first few categories (a kernel's args and a runtime call's differ).
class KeyOrders {
 public:
  KeyOrder& event() { return event_; }

  // The order of args in events of category `cat`; categories past the
  // first kCategories share the last one.
  KeyOrder& args_of(std::string_view cat) {
    for (size_t i = 0; i < used_; ++i) {
      if (categories_[i] == cat) return args_[i];
    }
    if (used_ < kCategories) {
      categories_[used_].assign(cat);
      return args_[used_++];
    }
    return args_[kCategories - 1];
  }

 private:
  static constexpr size_t kCategories = 8;
  KeyOrder event_;
  std::array<std::string, kCategories> categories_;
  std::array<KeyOrder, kCategories> args_;
  size_t used_ = 0;
};

}  // namespace stepscope
