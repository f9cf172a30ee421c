#include "importers/packed_event.hpp"

#include <cstring>
#include <limits>

namespace stepscope {

namespace {

// Packs `view` (empty, or within `text`) as a TextRef; false when outside.
bool refer(std::string_view text, std::string_view view, TextRef& ref) {
  if (view.empty()) {
    ref = TextRef{};
    return true;
  }
  auto from = reinterpret_cast<uintptr_t>(text.data());
  auto at = reinterpret_cast<uintptr_t>(view.data());
  if (at < from || at - from > text.size() || view.size() > text.size() - (at - from)) return false;
  ref = TextRef{static_cast<uint32_t>(at - from), static_cast<uint32_t>(view.size())};
  return true;
}

std::string_view view_of(const PackedPiece& packed, TextRef ref) {
  if (ref.size == 0) return {};
  return {packed.text + ref.offset, ref.size};
}

// A text track id lives in the int64 of the number: offset low, size high.
int64_t track_text_bits(TextRef ref) {
  return static_cast<int64_t>(uint64_t{ref.offset} | (uint64_t{ref.size} << 32));
}

TextRef track_text_ref(int64_t bits) {
  auto raw = static_cast<uint64_t>(bits);
  return TextRef{static_cast<uint32_t>(raw), static_cast<uint32_t>(raw >> 32)};
}

bool pack_track(std::string_view text, const TrackIdField& field, int64_t& packed, uint8_t& flags, uint8_t text_flag) {
  if (!field.is_text) {
    packed = field.number;
    return true;
  }
  TextRef ref;
  if (!refer(text, field.text, ref)) return false;
  packed = track_text_bits(ref);
  flags |= text_flag;
  return true;
}

TrackIdField unpack_track(const PackedPiece& packed, int64_t value, uint8_t text_flag) {
  TrackIdField field;
  if ((packed.flags & text_flag) == 0) {
    field.number = value;
  } else {
    field.is_text = true;
    field.text = view_of(packed, track_text_ref(value));
  }
  return field;
}

}  // namespace

PackedPiece pack_unread(std::string_view text, bool is_event, uint64_t index) {
  PackedPiece packed;
  packed.text = text.data();
  packed.correlation = static_cast<int64_t>(text.size());
  packed.event_index = index;
  packed.flags = is_event ? PackedPiece::kEvent : 0;
  return packed;
}

bool pack_read_event(std::string_view text, uint64_t event_index, const EventFields& fields, const EventArgs& args,
                     PackedPiece& packed, CounterNumbers& numbers) {
  if (text.size() > std::numeric_limits<uint32_t>::max()) return false;
  // Written in place, field by field: a copy of a whole piece built on the
  // stack stalled on store forwarding (perf: a quarter of this function).
  PackedPiece& out = packed;
  uint8_t flags = PackedPiece::kEvent | PackedPiece::kRead;
  bool ok = refer(text, fields.name, out.name) && refer(text, fields.cat, out.cat) && refer(text, fields.ph, out.ph) &&
            refer(text, fields.bp, out.bp) && refer(text, fields.flow_id, out.flow_id) &&
            refer(text, args.input_shapes, out.input_shapes) && refer(text, args.name, out.args_name) &&
            pack_track(text, fields.pid, out.pid, flags, PackedPiece::kPidIsText) &&
            pack_track(text, fields.tid, out.tid, flags, PackedPiece::kTidIsText);
  if (!ok) return false;
  out.text = text.data();
  out.text_size = static_cast<uint32_t>(text.size());
  out.event_index = event_index;
  out.ts_ns = fields.ts_ns.value_or(0);
  out.dur_ns = fields.dur_ns.value_or(0);
  if (fields.ts_ns) flags |= PackedPiece::kHasTs;
  if (fields.dur_ns) flags |= PackedPiece::kHasDur;
  if (args.numbers.empty()) {
    out.correlation = args.correlation;
    out.bytes = args.bytes;
  } else {
    // Only counter events have numbers, and they have no span args.
    out.correlation = static_cast<int64_t>(numbers.size());
    out.bytes = static_cast<int64_t>(args.numbers.size());
    flags |= PackedPiece::kNumbers;
    numbers.insert(numbers.end(), args.numbers.begin(), args.numbers.end());
  }
  out.flags = flags;
  return true;
}

void unpack_read_event(const PackedPiece& packed, const CounterNumbers& numbers, EventFields& fields, EventArgs& args) {
  fields.ph = view_of(packed, packed.ph);
  fields.name = view_of(packed, packed.name);
  fields.cat = view_of(packed, packed.cat);
  fields.bp = view_of(packed, packed.bp);
  fields.flow_id = view_of(packed, packed.flow_id);
  fields.pid = unpack_track(packed, packed.pid, PackedPiece::kPidIsText);
  fields.tid = unpack_track(packed, packed.tid, PackedPiece::kTidIsText);
  fields.ts_ns.reset();
  fields.dur_ns.reset();
  if ((packed.flags & PackedPiece::kHasTs) != 0) fields.ts_ns = packed.ts_ns;
  if ((packed.flags & PackedPiece::kHasDur) != 0) fields.dur_ns = packed.dur_ns;
  args.clear();
  args.name = view_of(packed, packed.args_name);
  args.input_shapes = view_of(packed, packed.input_shapes);
  if ((packed.flags & PackedPiece::kNumbers) != 0) {
    auto begin = numbers.begin() + packed.correlation;
    args.numbers.assign(begin, begin + packed.bytes);
  } else {
    args.correlation = packed.correlation;
    args.bytes = packed.bytes;
  }
}

}  // namespace stepscope
