#include "collectors/hooks/events.hpp"

#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace stepscope {

namespace {

// Bounds on what one record may claim, so a hostile or broken sender cannot
// make a string of megabytes (spans: kMaxHookSpanNs).
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
  return tid > 0 && start > 0 && end >= start && end - start <= kMaxHookSpanNs;
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

// How many numbers a record of `type` carries (TID START END, then its own);
// 0 for the records with text (ranges, facts, notes) or an unknown type.
size_t value_count(char type) {
  switch (type) {
    case 'D':
    case 'S':
    case 'M':
      return 5;
    case 'O':
    case 'K':
    case 'W':
    case 'G':
      return 4;
    case 'F':
    case 'B':
    case 'A':
      return 3;
    default:
      return 0;
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
    switch (type) {
      case 'D':  // a batch: samples, tokens
      case 'S':  // stepscope.step(): samples, tokens (-1: the batches')
      case 'M':  // memory peaks: host, device
        if (!valid_quantity(v[3]) || !valid_quantity(v[4])) return false;
        return place(type, v);
      case 'O':  // an optimizer step, and which optimizer (any number naming it)
      case 'K':
      case 'F':
      case 'B':
      case 'A':
        return place(type, v);
      case 'W':
        return valid_quantity(v[3]) && span(v, SpanKind::kOther, "worker_batch");
      case 'G':  // a collection of Python's cyclic garbage collector: its generation
        return v[3] >= -1 && v[3] <= 2 && span(v, SpanKind::kOther, "gc_pause");
      default:
        return false;
    }
  }

  bool place(char type, const int64_t* v) {
    out_.places.push_back({type, v[0], v[1], v[2], v[3], v[4]});
    return true;
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
  for (const HookSpanEvent& e : d.spans) {
    run.spans.push_back({e.start_ns, e.end_ns, d.pid, e.tid, e.kind, run.strings.intern(e.name)});
  }
  if (!d.places.empty()) {
    auto found = assemblers_.find(d.pid);
    if (found == assemblers_.end() && assemblers_.size() < kMaxProcesses) {
      found = assemblers_.emplace(d.pid, StepAssembler{}).first;
    }
    if (found == assemblers_.end()) {
      bad_ += d.places.size();
    } else {
      AssembledSteps parts;
      for (const HookPlace& place : d.places) found->second.take(place, parts);
      add_assembled(run, d.pid, parts);
    }
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

void HookRunBuilder::finish(Run& run) {
  for (auto& [pid, assembler] : assemblers_) {
    AssembledSteps parts;
    assembler.finish(parts);
    add_assembled(run, pid, parts);
  }
  assemblers_.clear();
}

void HookRunBuilder::add_assembled(Run& run, int64_t pid, const AssembledSteps& parts) {
  size_t batch = 0;
  for (const HookSpanEvent& e : parts.spans) {
    run.spans.push_back({e.start_ns, e.end_ns, pid, e.tid, e.kind, run.strings.intern(e.name)});
    if (e.kind != SpanKind::kDataWait) continue;
    auto [samples, tokens] = parts.batches[batch++];
    add_counter(run, "batch_samples", pid, "samples", e.end_ns, samples);
    add_counter(run, "batch_tokens", pid, "tokens", e.end_ns, tokens);
  }
  for (const HookStep& s : parts.steps) {
    run.spans.push_back({s.start_ns, s.end_ns, pid, s.tid, SpanKind::kStep, run.strings.intern("step")});
    add_counter(run, "step_samples", pid, "samples", s.end_ns, s.samples);
    add_counter(run, "step_tokens", pid, "tokens", s.end_ns, s.tokens);
  }
  for (const HookPeaks& peaks : parts.peaks) {
    add_counter(run, "step_peak_rss", pid, "bytes", peaks.end_ns, peaks.host_bytes);
    add_counter(run, "step_peak_device_memory", pid, "bytes", peaks.end_ns, peaks.device_bytes);
  }
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
