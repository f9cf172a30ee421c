// Building a Run from a Chrome trace: the scanner splits the input into
// header fields and events, the event reader parses each event, and this
// file turns events into spans, threads, counters and flows.
#include "importers/chrome_trace.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "importers/chrome_trace_event.hpp"
#include "importers/chrome_trace_header.hpp"
#include "importers/flow_binding.hpp"
#include "importers/intern_cache.hpp"
#include "importers/memory_events.hpp"
#include "importers/trace_event_pipeline.hpp"
#include "importers/trace_event_scanner.hpp"
#include "run/profiler_step_name.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

static_assert(TraceEventScanner::kPadding >= simdjson::SIMDJSON_PADDING,
              "events are parsed in place and simdjson reads past their end");

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& key) const {
    auto mixed = static_cast<uint64_t>(key.first) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(key.second);
    return std::hash<uint64_t>()(mixed);
  }
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>()(text); }
};

template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

using Track = std::pair<int64_t, int64_t>;  // (pid, tid)

struct OpenRange {
  int64_t start_ns;
  StringId name;
  SpanKind kind;
};

struct Warning {
  std::string text;
  bool fails_strict;
};

struct CategoryUse {
  SpanKind kind;
  bool known;
  size_t slices = 0;
};

constexpr size_t kMaxSpans = std::numeric_limits<SpanId>::max() - 1;

// Below this many bytes of JSON (an import of tens of ms) one thread: the
// second thread's start, handovers and cache traffic cost about a third more
// CPU, which a loaded machine does not give back in wall time (15 MB trace:
// 54 ms on two threads against 32 ms on one at load 6; bench/README.md,
// "Trace import").
constexpr uint64_t kTwoThreadsFromBytes = uint64_t{16} << 20;

class ChromeTraceImporter {
 public:
  ChromeTraceImporter(ByteStream& input, const ChromeTraceOptions& options)
      : input_(input), options_(options), source_(input.name()), reader_(source_, options.plain_event_reader), header_(source_) {}

  Run import() {
    run_.metadata["source"] = source_;
    reserve_for_input();
    if (uses_reading_thread()) {
      import_through_pipeline();
    } else {
      import_through_scanner();
    }
    input_.release_mapped();  // all read: the flow binding's peak without the input's last pages
    finish();
    return std::move(run_);
  }

 private:
  bool uses_reading_thread() const {
    switch (options_.threads) {
      case ImportThreads::kOne: return false;
      case ImportThreads::kTwo: return true;
      case ImportThreads::kAuto: break;
    }
    return std::thread::hardware_concurrency() >= 2 && estimated_json_bytes() >= kTwoThreadsFromBytes;
  }

  // One thread: the scanner's pre-reader reads plain events in place.
  void import_through_scanner() {
    TraceEventScanner scanner(input_, options_.chunk_size);
    scanner.set_pre_reader(&reader_);
    for (;;) {
      switch (scanner.next()) {
        case TraceEventScanner::Piece::kEnd: return;
        case TraceEventScanner::Piece::kHeaderField:
          import_header_field(scanner.key(), scanner.text(), scanner.offset());
          break;
        case TraceEventScanner::Piece::kEvent:
          event_index_ = scanner.event_index();
          if (!scanner.pre_read()) reader_.read(scanner.text(), scanner.padded_size(), scanner.offset(), event_index_);
          import_event(reader_.fields(), reader_.args(), scanner.text(), scanner.padded_size());
          break;
      }
    }
  }

  // Two threads: the pipeline's thread has split the input and read the
  // plain events; what it declined is read here, in order.
  void import_through_pipeline() {
    std::unique_ptr<TraceEventPipeline> pipeline;
    try {
      pipeline = std::make_unique<TraceEventPipeline>(input_, options_.chunk_size, options_.plain_event_reader);
    } catch (const std::system_error&) {
      return import_through_scanner();  // no thread to be had; nothing is read yet
    }
    while (const TraceEventBatch* batch = pipeline->next()) {
      for (size_t i = 0; i < batch->size; ++i) import_piece(*batch, batch->pieces[i]);
    }
    pipeline_bad_span_args_ = pipeline->bad_span_args();
  }

  void import_piece(const TraceEventBatch& batch, const PackedPiece& piece) {
    std::string_view text = piece.text_view();
    size_t padded_size = batch.padded_size(piece);
    if (!piece.is_event()) return import_header_field(batch.keys[piece.event_index], text, batch.offset(piece));
    event_index_ = piece.event_index;
    if (piece.is_read()) {
      unpack_read_event(piece, batch.numbers, unpacked_fields_, unpacked_args_);
      return import_event(unpacked_fields_, unpacked_args_, text, padded_size);
    }
    reader_.read(text, padded_size, batch.offset(piece), event_index_);
    import_event(reader_.fields(), reader_.args(), text, padded_size);
  }

  void import_event(const EventFields& fields, const EventArgs& args, std::string_view text, size_t padded_size) {
    dispatch(fields, args);
    if (is_memory_event(fields)) memory_events_.add(fields, resolve_id(fields.pid), text, padded_size, run_);
  }

  // gzip shrinks traces ~10x.
  uint64_t estimated_json_bytes() const { return input_.size_hint() * (input_.compressed() ? 12 : 1); }

  // Kineto events average 150-300 bytes. Reserved but untouched memory costs
  // no RSS, regrowing vectors of millions of spans does (and copies), so
  // reserve for the smallest plausible events. Not on huge pages: on a VM
  // that hands free 2 MiB blocks back to its host, zeroing a fresh huge page
  // can cost 4x what its 512 small pages do, and they were never measured
  // faster (bench/README.md, "Huge pages cost 4x here").
  void reserve_for_input() {
    auto spans = static_cast<size_t>(std::min<uint64_t>(estimated_json_bytes() / 128, kMaxSpans));
    run_.spans.reserve(spans);
    if (!options_.flows) return;
    span_threads_.reserve(spans);
    flow_endpoints_.reserve(spans / 2);
  }

  [[noreturn]] void fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", source_, what)); }
  [[noreturn]] void fail_event(std::string_view what) const { throw_event_error(source_, event_index_, what); }
  void warn(std::string message) { warnings_.push_back(Warning{std::move(message), true}); }
  // What sound traces have too (the profiler's window cuts flows in two) is
  // reported but does not fail a strict import.
  void note(std::string message) { warnings_.push_back(Warning{std::move(message), false}); }

  void import_header_field(std::string_view key, std::string_view text, uint64_t offset) {
    auto value = header_.read(key, text, offset);
    if (value) run_.metadata[std::string(key)] = std::move(*value);
  }

  // --- events --------------------------------------------------------------

  void dispatch(const EventFields& fields, const EventArgs& args) {
    if (fields.ph.size() != 1) return skip_phase(fields.ph);
    switch (fields.ph[0]) {
      case 'X': return add_complete(fields, args);
      case 'B': return begin_range(fields);
      case 'E': return end_range(fields);
      case 'M': return add_metadata_event(fields, args);
      case 'C': return add_counter(fields, args);
      case 'i':
      case 'I': return add_instant(fields);
      case 's':
      case 'f': return add_flow_endpoint(fields);
      default: return skip_phase(fields.ph);
    }
  }

  int64_t require_ts(const EventFields& fields) {
    if (!fields.ts_ns) fail_event("has no \"ts\"");
    last_ts_ns_ = std::max(last_ts_ns_, *fields.ts_ns);
    return *fields.ts_ns;
  }

  // A span's track and its thread's index in run_.threads (the flow
  // binding's track number).
  struct SpanTrack {
    Track track;
    uint32_t thread;
  };

  SpanTrack resolve_track(const EventFields& fields) {
    Track track{resolve_id(fields.pid), resolve_id(fields.tid)};
    return {track, static_cast<uint32_t>(note_thread(track, fields.pid, fields.tid))};
  }

  SpanKind kind_of(const EventFields& fields) {
    if (fields.cat.empty()) return chrome_category_kind({}, fields.pid.text);
    CategoryUse& use = category_use(fields.cat);
    ++use.slices;
    return use.kind;
  }

  // Traces interleave a handful of categories: the last few are found by
  // a compare, without hashing.
  CategoryUse& category_use(std::string_view cat) {
    for (const RecentCategory& recent : recent_categories_) {
      if (recent.use != nullptr && recent.name == cat) return *recent.use;
    }
    auto found = categories_.find(cat);
    if (found == categories_.end()) {
      CategoryUse use{chrome_category_kind(cat), is_known_chrome_category(cat)};
      found = categories_.emplace(std::string(cat), use).first;
    }
    // Map nodes stay put when the map grows, so the views stay valid.
    recent_categories_[next_recent_category_++ % recent_categories_.size()] = {found->first, &found->second};
    return found->second;
  }

  void add_complete(const EventFields& fields, const EventArgs& args) {
    int64_t start = require_ts(fields);
    if (!fields.dur_ns) fail_event("is a complete event (\"X\") without \"dur\"");
    int64_t duration = *fields.dur_ns;
    if (duration < 0) {
      ++negative_durations_;
      duration = 0;
    }
    if (start > std::numeric_limits<int64_t>::max() - duration) fail_event("\"ts\" + \"dur\" is out of range");
    Span& span = add_span(start, start + duration, resolve_track(fields), kind_of(fields),
                          names_.intern(fields.name));
    span.correlation = args.correlation;
    span.bytes = args.bytes;
    if (!args.input_shapes.empty()) span.detail = names_.intern(args.input_shapes);
  }

  Span& add_span(int64_t start, int64_t end, SpanTrack where, SpanKind kind, StringId name) {
    if (run_.spans.size() >= kMaxSpans) fail_event("too many spans");
    last_ts_ns_ = std::max(last_ts_ns_, end);
    if (options_.flows) span_threads_.push_back(where.thread);
    return run_.spans.emplace_back(Span{start, end, where.track.first, where.track.second, kind, name});
  }

  void begin_range(const EventFields& fields) {
    int64_t start = require_ts(fields);
    Track track = resolve_track(fields).track;
    open_ranges_[track].push_back(OpenRange{start, names_.intern(fields.name), kind_of(fields)});
  }

  void end_range(const EventFields& fields) {
    int64_t end = require_ts(fields);
    SpanTrack where = resolve_track(fields);
    auto found = open_ranges_.find(where.track);
    if (found == open_ranges_.end() || found->second.empty()) {
      ++unmatched_ends_;
      return;
    }
    OpenRange range = found->second.back();
    found->second.pop_back();
    if (end < range.start_ns) {
      ++ends_before_begins_;
      end = range.start_ns;
    }
    add_span(range.start_ns, end, where, range.kind, range.name);
  }

  void add_metadata_event(const EventFields& fields, const EventArgs& args) {
    int64_t pid = resolve_id(fields.pid);
    if (fields.name == "process_name") {
      note_process(pid, fields.pid).command = run_.strings.intern(args.name);
    } else if (fields.name == "thread_name") {
      Track track{pid, resolve_id(fields.tid)};
      run_.threads[note_thread(track, fields.pid, fields.tid)].name = run_.strings.intern(args.name);
    } else {
      note_process(pid, fields.pid);  // sort indexes, labels: the process exists
    }
  }

  void add_counter(const EventFields& fields, const EventArgs& args) {
    int64_t ts = require_ts(fields);
    int64_t pid = resolve_id(fields.pid);
    note_process(pid, fields.pid);
    for (const auto& [key, value] : args.numbers) {
      CounterTrackId track = counter_track(pid, fields.name, key);
      run_.counter_values.push_back(CounterValue{track, ts, value});
    }
  }

  CounterTrackId counter_track(int64_t pid, std::string_view name, std::string_view key) {
    scratch_.assign(name);
    scratch_ += '.';
    scratch_ += key;
    StringId track_name = run_.strings.intern(scratch_);
    auto [found, inserted] =
        counter_tracks_.try_emplace(Track{pid, track_name}, static_cast<CounterTrackId>(run_.counter_tracks.size()));
    if (inserted) run_.counter_tracks.push_back(CounterTrack{track_name, pid, StringTable::kEmpty});
    return found->second;
  }

  void add_instant(const EventFields& fields) {
    require_ts(fields);
    ++instant_events_;
  }

  void add_flow_endpoint(const EventFields& fields) {
    int64_t ts = require_ts(fields);
    if (fields.flow_id.empty()) fail_event("is a flow event without \"id\"");
    // String ids are numbered in order of appearance, kept flows or not.
    Track track{resolve_id(fields.pid), resolve_id(fields.tid)};
    if (!options_.flows) return;
    bool is_start = fields.ph == "s";
    bool binds_enclosing = is_start || fields.bp == "e";
    FlowEndpoint& endpoint = flow_endpoints_.emplace_back(flow_endpoint_id(fields.cat, fields.flow_id));
    endpoint.is_start = is_start;
    endpoint.binds_enclosing = binds_enclosing;
    endpoint.pid = track.first;
    endpoint.tid = track.second;
    endpoint.ts_ns = ts;
  }

  // Kineto's flow ids are integers and are used as they are; string ids
  // ("0x1f") are numbered in order of appearance.
  FlowEndpoint flow_endpoint_id(std::string_view cat, std::string_view id) {
    FlowEndpoint endpoint{};
    endpoint.kind = names_.intern(cat);
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), endpoint.id);
    if (ec == std::errc() && end == id.data() + id.size()) return endpoint;
    endpoint.id_is_text = true;
    auto found = text_flow_ids_.find(id);
    if (found == text_flow_ids_.end()) {
      found = text_flow_ids_.emplace(std::string(id), static_cast<int64_t>(text_flow_ids_.size())).first;
    }
    endpoint.id = found->second;
    return endpoint;
  }

  void skip_phase(std::string_view ph) {
    std::string_view shown = ph.substr(0, 8);
    auto found = skipped_phases_.find(shown);
    if (found == skipped_phases_.end()) found = skipped_phases_.emplace(std::string(shown), 0).first;
    ++found->second;
  }

  // --- processes and threads -----------------------------------------------

  int64_t resolve_id(const TrackIdField& field) {
    if (!field.is_text) return field.number;
    auto found = synthetic_ids_.find(field.text);
    if (found != synthetic_ids_.end()) return found->second;
    int64_t id = kSyntheticIdBase - static_cast<int64_t>(synthetic_ids_.size());
    synthetic_ids_.emplace(std::string(field.text), id);
    return id;
  }

  Process& note_process(int64_t pid, const TrackIdField& field) {
    auto [found, inserted] = process_index_.try_emplace(pid, run_.processes.size());
    if (inserted) run_.add_process(pid, field.is_text ? field.text : std::string_view());
    return run_.processes[found->second];
  }

  size_t note_thread(Track track, const TrackIdField& pid_field, const TrackIdField& tid_field) {
    if (track == last_thread_ && last_thread_index_ < run_.threads.size()) return last_thread_index_;
    auto [found, inserted] = thread_index_.try_emplace(track, run_.threads.size());
    if (inserted) {
      note_process(track.first, pid_field);
      run_.add_thread(track.first, track.second, tid_field.is_text ? tid_field.text : std::string_view());
    }
    last_thread_ = track;
    last_thread_index_ = found->second;
    return found->second;
  }

  // --- the end -------------------------------------------------------------

  void finish() {
    close_open_ranges();
    if (options_.flows) add_flows();
    add_profiler_step_group(run_.strings);
    run_.metadata["clock"] = "trace";
    run_.metadata["source"] = source_;
    run_.metadata["source_format"] = "chrome_trace";
    run_.metadata["instant_events"] = std::to_string(instant_events_);
    summarize_warnings();
    std::string problems = join(warnings_, "; ", true);
    if (options_.strict && !problems.empty()) fail("strict import refused the trace: " + problems);
  }

  void add_flows() {
    FlowTracks tracks{std::move(span_threads_), endpoint_threads(), run_.threads.size()};
    FlowBindingCounts flows =
        bind_flows(run_.spans, std::move(tracks), flow_endpoints_, run_.flows, uses_reading_thread());
    if (flows.unbound > 0) warn(fmt::format("{} flow events not on any slice of their thread ignored", flows.unbound));
    if (flows.unpaired > 0) note(fmt::format("{} flow events without a partner ignored", flows.unpaired));
  }

  // Each flow endpoint's thread index, kNoFlowTrack for a track without
  // threads (so without spans). Endpoints come in runs on one track.
  std::vector<uint32_t> endpoint_threads() const {
    std::vector<uint32_t> threads(flow_endpoints_.size());
    Track last{std::numeric_limits<int64_t>::min(), 0};
    uint32_t last_thread = kNoFlowTrack;
    for (size_t i = 0; i < flow_endpoints_.size(); ++i) {
      Track track{flow_endpoints_[i].pid, flow_endpoints_[i].tid};
      if (track != last) {
        auto found = thread_index_.find(track);
        last = track;
        last_thread = found == thread_index_.end() ? kNoFlowTrack : static_cast<uint32_t>(found->second);
      }
      threads[i] = last_thread;
    }
    return threads;
  }

  void close_open_ranges() {
    size_t unclosed = 0;
    for (auto& [track, ranges] : open_ranges_) {
      for (const OpenRange& range : ranges) {
        SpanTrack where{track, static_cast<uint32_t>(thread_index_.at(track))};
        add_span(range.start_ns, std::max(range.start_ns, last_ts_ns_), where, range.kind, range.name);
        ++unclosed;
      }
    }
    if (unclosed > 0) warn(fmt::format("{} \"B\" events without \"E\" closed at the last timestamp", unclosed));
  }

  void summarize_warnings() {
    auto count_warning = [this](size_t count, std::string_view what) {
      if (count > 0) warn(fmt::format("{} {}", count, what));
    };
    const EventReadCounts& read = reader_.counts();
    if (read.invalid_utf8_bytes > 0) {
      warn(fmt::format("input is not valid UTF-8: {} bytes replaced by U+FFFD", read.invalid_utf8_bytes));
    }
    count_warning(read.control_characters, "raw control characters inside strings accepted");
    count_warning(unmatched_ends_, "\"E\" events without a matching \"B\" ignored");
    count_warning(ends_before_begins_, "\"E\" events before their \"B\" made zero-length");
    count_warning(negative_durations_, "negative \"dur\" values made zero");
    count_warning(read.non_numeric_counter_args, "non-numeric counter args ignored");
    count_warning(read.bad_span_args + pipeline_bad_span_args_, "\"correlation\" or \"bytes\" args that are not non-negative integers ignored");
    count_warning(read.replaced_surrogates, "strings with lone surrogate escapes decoded with U+FFFD");
    count_warning(memory_events_.skipped(), "\"[memory]\" events without numeric device and totals ignored");
    // Sorted, so the warnings read the same on every run.
    for (const auto& [phase, count] : std::map<std::string, size_t>(skipped_phases_.begin(), skipped_phases_.end())) {
      warn(fmt::format("{} events of unsupported phase \"{}\" skipped", count, phase));
    }
    for (const auto& [category, use] : std::map<std::string, CategoryUse>(categories_.begin(), categories_.end())) {
      if (!use.known) warn(fmt::format("{} slices of unknown category \"{}\" kept as kind other", use.slices, category));
    }
    if (!warnings_.empty()) run_.metadata["import_warnings"] = join(warnings_, "\n", false);
  }

  static std::string join(const std::vector<Warning>& warnings, std::string_view separator, bool only_failing) {
    std::string joined;
    for (const Warning& warning : warnings) {
      if (only_failing && !warning.fails_strict) continue;
      if (!joined.empty()) joined += separator;
      joined += warning.text;
    }
    return joined;
  }

  ByteStream& input_;
  ChromeTraceOptions options_;
  std::string source_;
  Run run_;
  InternCache names_{run_.strings};
  ChromeTraceEventReader reader_;
  TraceHeaderReader header_;
  MemoryEventImporter memory_events_;
  EventFields unpacked_fields_;  // of the event the reading thread read, unpacked
  EventArgs unpacked_args_;
  size_t event_index_ = 0;
  size_t pipeline_bad_span_args_ = 0;  // of the events the reading thread read
  std::string scratch_;
  int64_t last_ts_ns_ = std::numeric_limits<int64_t>::min();

  StringMap<int64_t> synthetic_ids_;
  StringMap<CategoryUse> categories_;
  struct RecentCategory {
    std::string_view name;
    CategoryUse* use = nullptr;
  };
  std::array<RecentCategory, 4> recent_categories_{};
  size_t next_recent_category_ = 0;
  std::unordered_map<int64_t, size_t> process_index_;
  std::unordered_map<Track, size_t, PairHash> thread_index_;
  Track last_thread_{std::numeric_limits<int64_t>::min(), 0};
  size_t last_thread_index_ = std::numeric_limits<size_t>::max();
  std::unordered_map<Track, std::vector<OpenRange>, PairHash> open_ranges_;
  std::unordered_map<Track, CounterTrackId, PairHash> counter_tracks_;
  StringMap<int64_t> text_flow_ids_;
  std::vector<FlowEndpoint> flow_endpoints_;
  std::vector<uint32_t> span_threads_;  // of each span: its thread's index, for the flow binding

  size_t instant_events_ = 0;
  size_t unmatched_ends_ = 0;
  size_t ends_before_begins_ = 0;
  size_t negative_durations_ = 0;
  StringMap<size_t> skipped_phases_;
  std::vector<Warning> warnings_;
};

}  // namespace

Run import_chrome_trace_stream(ByteStream& input, const ChromeTraceOptions& options) {
  return ChromeTraceImporter(input, options).import();
}

Run import_chrome_trace_bytes(std::string_view json, const std::string& source_name,
                              const ChromeTraceOptions& options) {
  ByteStream input = ByteStream::from_memory(json, source_name);
  return import_chrome_trace_stream(input, options);
}

Run import_chrome_trace(const std::string& path, const ChromeTraceOptions& options) {
  ByteStream input = ByteStream::map_file(path);
  return import_chrome_trace_stream(input, options);
}

}  // namespace stepscope
