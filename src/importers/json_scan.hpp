// The plain event reader's string scan (to the first quote, backslash,
// control character or non-ASCII byte) in two forms: a portable one (a byte
// at a time) and an SSE2 one (16 bytes at a time, the x86-64 baseline, so no
// runtime check). The reader uses the fastest the build allows; the unit
// tests compare both forms on the same inputs, so the portable path that
// other platforms build stays tested on x86-64.
//
// A scan reads from p up to `end` and may load up to kReadAhead bytes past
// `end` (they must be allocated; their value does not matter). Results never
// point past `end`.
#pragma once

#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stepscope::json_scan {

inline constexpr size_t kReadAhead = 16;

namespace portable {

// The first byte in [p, end) that is '"', '\\', a control character or not
// ASCII; `end` when there is none.
inline const char* find_string_special(const char* p, const char* end) {
  for (; p < end; ++p) {
    auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
  }
  return end;
}

}  // namespace portable

#if defined(__SSE2__)
namespace sse2 {

inline const char* find_string_special(const char* p, const char* end) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; p < end; p += 16) {
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed: bytes >= 0x80 are negative, so below 0x20 too.
    __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
                                _mm_cmplt_epi8(bytes, space));
    if (int mask = _mm_movemask_epi8(hits); mask != 0) {
      const char* hit = p + __builtin_ctz(static_cast<unsigned>(mask));
      return hit < end ? hit : end;
    }
  }
  return end;
}

}  // namespace sse2
#endif

#if defined(__SSE2__)
using sse2::find_string_special;
#else
using portable::find_string_special;
#endif

}  // namespace stepscope::json_scan
