// The two-line form an event takes between the importer's threads
// (packed_event.hpp): what the plain reader read comes back unpacked field
// for field, counter numbers included, and what cannot be packed is refused.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "importers/packed_event.hpp"
#include "importers/plain_event_reader.hpp"

namespace stepscope {
namespace {

struct ReadEvent {
  std::string text;  // with the reader's read-ahead after it
  EventFields fields;
  EventArgs args;
};

ReadEvent read_plain(const std::string& json) {
  ReadEvent event{json + std::string(PlainEventReader::kReadAhead, ' '), {}, {}};
  PlainEventCounts counts;
  size_t length = PlainEventReader().read(event.text.data(), json.size(), event.fields, event.args, counts);
  EXPECT_EQ(length, json.size()) << json;
  return event;
}

void expect_same_track(const TrackIdField& got, const TrackIdField& want) {
  EXPECT_EQ(got.is_text, want.is_text);
  EXPECT_EQ(got.number, want.number);
  EXPECT_EQ(got.text, want.text);
}

void expect_same(const EventFields& got, const EventFields& want) {
  EXPECT_EQ(got.ph, want.ph);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.cat, want.cat);
  EXPECT_EQ(got.bp, want.bp);
  EXPECT_EQ(got.flow_id, want.flow_id);
  expect_same_track(got.pid, want.pid);
  expect_same_track(got.tid, want.tid);
  EXPECT_EQ(got.ts_ns, want.ts_ns);
  EXPECT_EQ(got.dur_ns, want.dur_ns);
}

void expect_same(const EventArgs& got, const EventArgs& want) {
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.numbers, want.numbers);
  EXPECT_EQ(got.correlation, want.correlation);
  EXPECT_EQ(got.bytes, want.bytes);
  EXPECT_EQ(got.input_shapes, want.input_shapes);
}

TEST(PackedEvent, UnpacksWhatThePlainReaderRead) {
  const char* events[] = {
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1712195497027744.5, "dur": 0.382,
          "args": {"correlation": 42, "bytes": 4096, "Input Dims": [[2, 3], []]}})",
      R"({"ph": "C", "name": "mem", "pid": "GPU 0", "tid": "stream 7", "ts": 5, "args": {"a": 1.5, "b": -2}})",
      R"({"ph": "M", "name": "thread_name", "pid": -3, "tid": 9, "args": {"name": "worker"}})",
      R"({"ph": "f", "bp": "e", "id": 77, "cat": "ac2g", "pid": 1, "tid": 2, "ts": 0})",
      R"({"ph": "s", "id": "0x1f", "pid": 1, "tid": 2, "ts": -4})",
      R"({"ph": "i", "name": "", "s": "t"})",
  };
  CounterNumbers numbers = {{"earlier", 1.0}};
  // Kept to the end: the counter numbers' names are views into the texts.
  std::vector<ReadEvent> read;
  read.reserve(std::size(events));
  for (const char* json : events) {
    ReadEvent& event = read.emplace_back(read_plain(json));
    std::string_view text(event.text.data(), std::string_view(json).size());
    PackedPiece packed;
    ASSERT_TRUE(pack_read_event(text, 12, event.fields, event.args, packed, numbers)) << json;
    EXPECT_TRUE(packed.is_event());
    EXPECT_TRUE(packed.is_read());
    EXPECT_EQ(packed.text_view(), text);
    EXPECT_EQ(packed.event_index, 12u);
    EventFields fields;
    EventArgs args;
    args.numbers = {{"stale", 9.0}};
    unpack_read_event(packed, numbers, fields, args);
    SCOPED_TRACE(json);
    expect_same(fields, event.fields);
    expect_same(args, event.args);
  }
  ASSERT_EQ(numbers.size(), 3u);  // the counter's two after the one there was
  EXPECT_EQ(numbers[1].first, "a");
  EXPECT_EQ(numbers[2].second, -2.0);
}

TEST(PackedEvent, RefusesViewsOutsideTheText) {
  ReadEvent event = read_plain(R"({"ph": "X", "name": "op", "ts": 1, "dur": 2})");
  std::string_view whole(event.text.data(), event.text.size() - PlainEventReader::kReadAhead);
  CounterNumbers numbers;
  PackedPiece packed;
  // A text that ends before the name: its view lies outside.
  EXPECT_FALSE(pack_read_event(whole.substr(0, 12), 0, event.fields, event.args, packed, numbers));
  std::string elsewhere = "elsewhere";
  event.fields.cat = elsewhere;
  EXPECT_FALSE(pack_read_event(whole, 0, event.fields, event.args, packed, numbers));
  EXPECT_TRUE(numbers.empty());
}

TEST(PackedEvent, UnreadPiecesKeepTheirTextAndIndex) {
  std::string text = R"({"ph": "X", "name": "caf\u00e9"})";
  PackedPiece event = pack_unread(text, true, 5);
  EXPECT_TRUE(event.is_event());
  EXPECT_FALSE(event.is_read());
  EXPECT_EQ(event.text_view(), text);
  EXPECT_EQ(event.event_index, 5u);
  PackedPiece header = pack_unread("[1, 2]", false, 3);
  EXPECT_FALSE(header.is_event());
  EXPECT_EQ(header.text_view(), "[1, 2]");
  EXPECT_EQ(header.event_index, 3u);
}

}  // namespace
}  // namespace stepscope
