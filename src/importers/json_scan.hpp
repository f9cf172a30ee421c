// The byte scans the plain event reader spends its time in, each in two
// forms: a portable one (a byte at a time) and an SSE2 one (16 bytes at a
// time, the x86-64 baseline, so no runtime check). The reader uses the
// fastest the build allows (json_scan::find_string_special, ...); the unit
// tests compare both forms on the same inputs, so the portable path that
// other platforms build stays tested on x86-64 too.
//
// Every scan reads from p up to `end` and may load up to kReadAhead bytes
// past `end` (they must be allocated; their value does not matter). Results
// never point past `end`.
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

// The first byte in [p, end) that is not a decimal digit; `end` when all are.
inline const char* skip_digits(const char* p, const char* end) {
  while (p < end && *p >= '0' && *p <= '9') ++p;
  return p;
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

// Numbers in traces are runs of 1-16 digits (ids, timestamps): one load
// and compare finds the end of most, where a byte loop mispredicts its exit.
inline const char* skip_digits(const char* p, const char* end) {
  const __m128i zero = _mm_set1_epi8('0');
  const __m128i nine = _mm_set1_epi8(9);
  for (; p < end; p += 16) {
    __m128i offsets = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), zero);
    // A digit's offset from '0' is 0..9 unsigned: min(offset, 9) == offset.
    __m128i digits = _mm_cmpeq_epi8(_mm_min_epu8(offsets, nine), offsets);
    if (int other = _mm_movemask_epi8(digits) ^ 0xFFFF; other != 0) {
      const char* hit = p + __builtin_ctz(static_cast<unsigned>(other));
      return hit < end ? hit : end;
    }
  }
  return end;
}

}  // namespace sse2
#endif

#if defined(__SSE2__)
using sse2::find_string_special;
using sse2::skip_digits;
#else
using portable::find_string_special;
using portable::skip_digits;
#endif

}  // namespace stepscope::json_scan
