#include "run/span_block.hpp"

#include <fmt/format.h>

#include "run/column_block.hpp"

namespace stepscope {

namespace {

// The least and the most a span's nine values take (8 varints of 1 to 10 bytes, and a byte).
constexpr size_t kMinBytesPerSpan = 9, kMaxBytesPerSpan = 81;

}  // namespace

// Nine columns: start, duration, pid, tid, kind, name, correlation, bytes, detail.
std::string encode_span_block(std::span<const Span> spans) {
  ColumnWriter columns(spans.size() * 12);
  columns.deltas(spans, [](const Span& s) { return as_unsigned(s.start_ns); });
  // Spans are written as they end, so their starts are near each other's but
  // not in order; a duration is small where an end is not.
  for (const Span& s : spans) columns.varint(zigzag(as_unsigned(s.end_ns) - as_unsigned(s.start_ns)));
  columns.deltas(spans, [](const Span& s) { return as_unsigned(s.pid); });
  for (const Span& s : spans) columns.varint(zigzag(as_unsigned(s.tid) - as_unsigned(s.pid)));
  for (const Span& s : spans) columns.byte(static_cast<uint8_t>(s.kind));
  for (const Span& s : spans) columns.varint(s.name);
  // Launches and their kernels number their correlations in order.
  columns.deltas(spans, [](const Span& s) { return as_unsigned(s.correlation); });
  for (const Span& s : spans) columns.signed_varint(s.bytes);
  for (const Span& s : spans) columns.varint(s.detail);
  return columns.compressed();
}

namespace {

// Fills `spans` from the columns; an empty string, or what is wrong.
std::string take_columns(ColumnReader& columns, size_t strings, std::span<Span> spans) {
  columns.deltas(spans, [](Span& s, uint64_t start) { s.start_ns = static_cast<int64_t>(start); });
  for (Span& s : spans) s.end_ns = static_cast<int64_t>(as_unsigned(s.start_ns) + unzigzag(columns.varint()));
  columns.deltas(spans, [](Span& s, uint64_t pid) { s.pid = static_cast<int64_t>(pid); });
  for (Span& s : spans) s.tid = static_cast<int64_t>(as_unsigned(s.pid) + unzigzag(columns.varint()));
  for (Span& s : spans) {
    uint8_t kind = columns.byte();
    if (kind >= kSpanKindCount) return fmt::format("unknown span kind {}", kind);
    s.kind = static_cast<SpanKind>(kind);
  }
  IdRefs refs(strings, "string");
  for (Span& s : spans) s.name = refs.take(columns.varint());
  columns.deltas(spans, [](Span& s, uint64_t correlation) { s.correlation = static_cast<int64_t>(correlation); });
  for (Span& s : spans) s.bytes = columns.signed_varint();
  for (Span& s : spans) s.detail = refs.take(columns.varint());
  if (std::string error = refs.error(); !error.empty()) return error;
  if (columns.failed() || columns.remaining() != 0) return "spans do not fill the block";
  return {};
}

}  // namespace

std::string decode_span_block(std::string_view data, size_t count, size_t strings, std::vector<Span>& out) {
  return decode_rows(data, count, kMinBytesPerSpan, kMaxBytesPerSpan, "spans", out,
                     [strings](ColumnReader& columns, std::span<Span> spans) {
                       return take_columns(columns, strings, spans);
                     });
}

}  // namespace stepscope
