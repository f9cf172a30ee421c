#include "collectors/hooks/events.hpp"

#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace stepscope {

namespace {

// Bounds on what one record may claim, so a hostile or broken sender cannot
// make a span of centuries or a string of megabytes.
constexpr int64_t kMaxSpanNs = 7LL * 24 * 3600 * 1'000'000'000;
constexpr size_t kMaxNameBytes = 1024;
constexpr size_t kMaxFactBytes = 256;  // two DataLoaders' settings (fact `dataloader`)
constexpr size_t kMaxDisabledNotes = 50;
// A binary record: its type (the text record's letter) and seven values.
constexpr size_t kBinaryValues = 7;
constexpr size_t kBinaryRecordBytes = (1 + kBinaryValues) * sizeof(int64_t);

// Splits off the next space-separated field.
std::string_view next_field(std::string_view& rest) {
  size_t space = rest.find(' ');
  std::string_view field = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  return field;
}

bool parse_int(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc{} && end == text.data() + text.size();
}

// Reads `count` integers; false unless all are there and well formed.
bool parse_ints(std::string_view& rest, int64_t* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!parse_int(next_field(rest), out[i])) return false;
  }
  return true;
}

bool valid_interval(int64_t tid, int64_t start, int64_t end) {
  return tid > 0 && start > 0 && end >= start && end - start <= kMaxSpanNs;
}

// -1 means unknown; anything else must be a plausible count.
bool valid_quantity(int64_t value) { return value >= -1; }

bool valid_key(std::string_view key) {
  if (key.empty() || key.size() > 32) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

std::optional<SpanKind> phase_kind(char type) {
  switch (type) {
    case 'F':
      return SpanKind::kForward;
    case 'B':
      return SpanKind::kBackward;
    case 'O':
      return SpanKind::kOptimizer;
    default:
      return std::nullopt;
  }
}

// How many numbers a record of `type` carries (TID START END, then its own);
// 0 for the records with text (ranges, facts, notes) or an unknown type.
size_t value_count(char type) {
  switch (type) {
    case 'S':
      return 7;
    case 'D':
    case 'M':
      return 5;
    case 'W':
    case 'G':
      return 4;
    case 'F':
    case 'B':
    case 'O':
    case 'E':
      return 3;
    default:
      return 0;
  }
}

const char* phase_name(SpanKind kind) {
  switch (kind) {
    case SpanKind::kForward:
      return "forward";
    case SpanKind::kBackward:
      return "backward";
    default:
      return "optimizer";
  }
}

class RecordDecoder {
 public:
  explicit RecordDecoder(HookDatagram& out) : out_(out) {}

  // A text record (a line); false when it is malformed.
  bool decode(std::string_view line) {
    if (line.size() < 2 || line[1] != ' ') return false;
    char type = line[0];
    std::string_view rest = line.substr(2);
    if (size_t count = value_count(type)) {
      int64_t v[kBinaryValues] = {};
      return parse_ints(rest, v, count) && rest.empty() && numbers(type, v);
    }
    switch (type) {
      case 'R':
        return user_range(rest);
      case 'P':
        return fact(rest);
      case 'X':
        return disabled(rest);
      case 'N':
        return dropped(rest);
      default:
        return false;
    }
  }

  // A binary record: its type, then kBinaryValues values, those the type
  // does not carry zero; false when it is malformed.
  bool decode(const int64_t* record) {
    if (record[0] <= 0 || record[0] > 127) return false;
    char type = static_cast<char>(record[0]);
    size_t count = value_count(type);
    if (count == 0) return false;
    for (size_t i = count; i < kBinaryValues; ++i) {
      if (record[1 + i] != 0) return false;
    }
    return numbers(type, record + 1);
  }

 private:
  // The records of numbers alone: TID START END, then what `type` carries.
  bool numbers(char type, const int64_t* v) {
    if (!valid_interval(v[0], v[1], v[2])) return false;
    if (auto kind = phase_kind(type)) return span(v, *kind, phase_name(*kind));
    switch (type) {
      case 'S':
        for (int i = 3; i < 7; ++i) {
          if (!valid_quantity(v[i])) return false;
        }
        out_.steps.push_back({v[0], v[1], v[2], v[3], v[4], v[5], v[6]});
        return true;
      case 'D':
        if (!valid_quantity(v[3]) || !valid_quantity(v[4])) return false;
        out_.batches.emplace_back(v[3], v[4]);
        return span(v, SpanKind::kDataWait, "data_wait");
      case 'M':  // the peaks since the last read, for the step that ended at END
        if (!valid_quantity(v[3]) || !valid_quantity(v[4])) return false;
        out_.late_peaks.push_back({v[0], v[1], v[2], -1, -1, v[3], v[4]});
        return true;
      case 'W':
        return valid_quantity(v[3]) && span(v, SpanKind::kOther, "worker_batch");
      case 'G':  // a collection of Python's cyclic garbage collector: its generation
        return v[3] >= -1 && v[3] <= 2 && span(v, SpanKind::kOther, "gc_pause");
      case 'E':
        return span(v, SpanKind::kOther, "evaluation");
      default:
        return false;
    }
  }

  bool span(const int64_t* v, SpanKind kind, std::string_view name) {
    out_.spans.push_back({kind, v[0], v[1], v[2], std::string(name)});
    return true;
  }

  bool user_range(std::string_view rest) {
    int64_t v[3];
    if (!parse_ints(rest, v, 3) || !valid_interval(v[0], v[1], v[2]) || rest.size() > kMaxNameBytes) {
      return false;
    }
    out_.spans.push_back({SpanKind::kUserRange, v[0], v[1], v[2], std::string(rest)});
    return true;
  }

  bool fact(std::string_view rest) {
    std::string_view key = next_field(rest);
    if (!valid_key(key) || rest.size() > kMaxFactBytes) return false;
    out_.facts.emplace_back(std::string(key), std::string(rest));
    return true;
  }

  bool disabled(std::string_view rest) {
    if (rest.empty() || rest.size() > kMaxNameBytes) return false;
    out_.disabled.emplace_back(rest);
    return true;
  }

  bool dropped(std::string_view rest) {
    int64_t count = 0;
    if (!parse_int(rest, count) || count < 0) return false;
    out_.dropped_by_sender += static_cast<uint64_t>(count);
    return true;
  }

  HookDatagram& out_;
};

void decode_binary_records(std::string_view body, RecordDecoder& decoder, HookDatagram& out) {
  int64_t record[1 + kBinaryValues];
  for (size_t at = 0; at + kBinaryRecordBytes <= body.size(); at += kBinaryRecordBytes) {
    std::memcpy(record, body.data() + at, kBinaryRecordBytes);  // the bytes need not be aligned
    if (!decoder.decode(record)) ++out.bad_records;
  }
  if (body.size() % kBinaryRecordBytes != 0) ++out.bad_records;  // a record cut short
}

}  // namespace

std::optional<HookDatagram> decode_hook_datagram(std::string_view data) {
  size_t newline = data.find('\n');
  std::string_view header = data.substr(0, newline);
  bool binary = header.substr(0, 4) == "SS2 ";
  if (!binary && header.substr(0, 4) != "SS1 ") return std::nullopt;
  HookDatagram out;
  if (!parse_int(header.substr(4), out.pid) || out.pid <= 0 || out.pid > (1LL << 32)) return std::nullopt;
  if (newline == std::string_view::npos) return out;
  RecordDecoder decoder(out);
  std::string_view rest = data.substr(newline + 1);
  if (binary) {
    decode_binary_records(rest, decoder, out);
    return out;
  }
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (!decoder.decode(line)) ++out.bad_records;
  }
  return out;
}

void HookRunBuilder::add(Run& run, const HookDatagram& d) {
  size_t batch = 0;
  for (const HookSpanEvent& e : d.spans) {
    run.spans.push_back({e.start_ns, e.end_ns, d.pid, e.tid, e.kind, run.strings.intern(e.name)});
    if (e.kind != SpanKind::kDataWait) continue;
    auto [samples, tokens] = d.batches[batch++];
    add_counter(run, "batch_samples", d.pid, "samples", e.end_ns, samples);
    add_counter(run, "batch_tokens", d.pid, "tokens", e.end_ns, tokens);
  }
  for (const HookStepEvent& s : d.steps) {
    run.spans.push_back({s.start_ns, s.end_ns, d.pid, s.tid, SpanKind::kStep, run.strings.intern("step")});
    add_counter(run, "step_samples", d.pid, "samples", s.end_ns, s.samples);
    add_counter(run, "step_tokens", d.pid, "tokens", s.end_ns, s.tokens);
    add_counter(run, "step_peak_rss", d.pid, "bytes", s.end_ns, s.host_peak_bytes);
    add_counter(run, "step_peak_device_memory", d.pid, "bytes", s.end_ns, s.device_peak_bytes);
  }
  for (const HookStepEvent& late : d.late_peaks) {
    add_counter(run, "step_peak_rss", d.pid, "bytes", late.end_ns, late.host_peak_bytes);
    add_counter(run, "step_peak_device_memory", d.pid, "bytes", late.end_ns, late.device_peak_bytes);
  }
  for (const auto& [key, value] : d.facts) run.metadata[fmt::format("hooks.{}.{}", d.pid, key)] = value;
  for (const std::string& note : d.disabled) {
    if (disabled_++ >= kMaxDisabledNotes) break;
    std::string& all = run.metadata["hooks_disabled"];
    all += fmt::format("{}pid {}: {}", all.empty() ? "" : "\n", d.pid, note);
  }
  bad_ += d.bad_records;
  dropped_ += d.dropped_by_sender;
  update_totals(run);
}

void HookRunBuilder::add_bad_datagram(Run& run) {
  ++bad_;
  update_totals(run);
}

CounterTrackId HookRunBuilder::track(Run& run, std::string_view name, int64_t pid, std::string_view unit) {
  auto [it, added] = tracks_.try_emplace({std::string(name), pid}, 0);
  if (added) {
    it->second = static_cast<CounterTrackId>(run.counter_tracks.size());
    run.counter_tracks.push_back({run.strings.intern(name), pid, run.strings.intern(unit)});
  }
  return it->second;
}

// Unknown values (-1) are left out rather than stored as a fake number.
void HookRunBuilder::add_counter(Run& run, std::string_view name, int64_t pid, std::string_view unit,
                                 int64_t ts_ns, int64_t value) {
  if (value < 0) return;
  run.counter_values.push_back({track(run, name, pid, unit), ts_ns, static_cast<double>(value)});
}

void HookRunBuilder::update_totals(Run& run) {
  if (bad_) run.metadata["hooks_bad_records"] = std::to_string(bad_);
  if (dropped_) run.metadata["hooks_dropped_records"] = std::to_string(dropped_);
}

}  // namespace stepscope
