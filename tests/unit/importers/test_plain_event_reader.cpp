// The hand-written reader of plain events: what it reads, what it declines,
// and that imports through it are identical to imports through simdjson
// alone, on odd events and on every real trace of ../shared/testdata.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "chrome_trace_test_support.hpp"
#include "importers/chrome_trace.hpp"
#include "importers/plain_event_reader.hpp"
#include "kineto_testdata.hpp"
#include "run_difference.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

// What the reader read, with the text its fields' views point into (on the
// heap: it is longer than any short-string buffer, so a move keeps it).
struct PlainRead {
  std::string padded;
  size_t length = 0;
  EventFields fields;
  EventArgs args;
  PlainEventCounts counts;
};

PlainRead read_plain(const std::string& event) {
  PlainRead result;
  result.padded = event + std::string(PlainEventReader::kReadAhead, '\0');
  result.length = PlainEventReader().read(result.padded.data(), event.size(), result.fields, result.args, result.counts);
  return result;
}

TEST(PlainEventReader, ReadsAKinetoKernel) {
  std::string event =
      R"j({"ph": "X", "cat": "kernel", "name": "void k<1>(int)", "pid": 0, "tid": 7, "ts": 1712195497111765.2, )j"
      R"("dur": 24.576, "args": {"External id": 20945, "device": 0, "correlation": 20200814, "grid": [256, 1, 1], )"
      R"("blocks per SM": 3.2, "bytes": 4096}})";
  std::string padded = event + std::string(PlainEventReader::kReadAhead, '\0');
  EventFields fields;
  EventArgs args;
  PlainEventCounts counts;
  ASSERT_EQ(PlainEventReader().read(padded.data(), event.size(), fields, args, counts), event.size());
  EXPECT_EQ(fields.ph, "X");
  EXPECT_EQ(fields.cat, "kernel");
  EXPECT_EQ(fields.name, "void k<1>(int)");
  EXPECT_EQ(fields.pid.number, 0);
  EXPECT_EQ(fields.tid.number, 7);
  EXPECT_EQ(fields.ts_ns, 1712195497111765200);
  EXPECT_EQ(fields.dur_ns, 24576);
  EXPECT_EQ(args.correlation, 20200814);
  EXPECT_EQ(args.bytes, 4096);
  EXPECT_EQ(counts.bad_span_args, 0u);
}

TEST(PlainEventReader, ReadsStringIdsFlowIdsShapesAndArgsBeforePhase) {
  std::string event =
      R"({"args": {"Input Dims": [[2, 3], []], "correlation": -4}, "ph": "X", "pid": "Spans", "tid": "t 1", )"
      R"("ts": 5, "dur": 1, "name": "aten::mm"})";
  std::string padded = event + std::string(PlainEventReader::kReadAhead, '\0');
  EventFields fields;
  EventArgs args;
  PlainEventCounts counts;
  ASSERT_EQ(PlainEventReader().read(padded.data(), event.size(), fields, args, counts), event.size());
  EXPECT_TRUE(fields.pid.is_text);
  EXPECT_EQ(fields.pid.text, "Spans");
  EXPECT_EQ(fields.tid.text, "t 1");
  EXPECT_EQ(args.input_shapes, "[[2, 3], []]");
  EXPECT_EQ(args.correlation, 0);
  EXPECT_EQ(counts.bad_span_args, 1u);  // a negative correlation

  std::string flow = R"({"ph": "s", "id": "0x1f", "pid": 1, "tid": 1, "ts": 2, "cat": "ac2g"})";
  std::string padded_flow = flow + std::string(PlainEventReader::kReadAhead, '\0');
  ASSERT_EQ(PlainEventReader().read(padded_flow.data(), flow.size(), fields, args, counts), flow.size());
  EXPECT_EQ(fields.flow_id, "\"0x1f\"");  // simdjson's raw token, quotes included
}

// The importer reuses one EventFields: what an event lacks must not leak
// from the one before.
TEST(PlainEventReader, FieldsTheEventLacksAreClearedOfTheLastOnes) {
  std::string first = R"({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 5, "bp": "e", "pid": "P", "tid": 2, "ts": 3, "dur": 4})";
  std::string second = R"({"args": {"correlation": 7}, "ph": "X", "ts": 9})";
  std::string padded = first + std::string(PlainEventReader::kReadAhead, '\0');
  std::string padded_second = second + std::string(PlainEventReader::kReadAhead, '\0');
  PlainEventReader reader;
  EventFields fields;
  EventArgs args;
  PlainEventCounts counts;
  ASSERT_EQ(reader.read(padded.data(), first.size(), fields, args, counts), first.size());
  args.clear();
  ASSERT_EQ(reader.read(padded_second.data(), second.size(), fields, args, counts), second.size());
  EXPECT_EQ(fields.ph, "X");
  EXPECT_EQ(fields.ts_ns, 9000);
  EXPECT_TRUE(fields.name.empty() && fields.cat.empty() && fields.bp.empty() && fields.flow_id.empty());
  EXPECT_FALSE(fields.pid.is_text);
  EXPECT_EQ(fields.pid.number, 0);
  EXPECT_FALSE(fields.dur_ns.has_value());
  EXPECT_EQ(args.correlation, 7);  // args before "ph", read at the end
  // An event without "ph" is declined even though the last one had one.
  std::string no_phase = R"({"ts": 1})";
  std::string padded_no_phase = no_phase + std::string(PlainEventReader::kReadAhead, '\0');
  EXPECT_EQ(reader.read(padded_no_phase.data(), no_phase.size(), fields, args, counts), 0u);
}

TEST(PlainEventReader, DeclinesWhatSimdjsonMustRead) {
  const std::vector<std::string> declined = {
      R"({"ph": "X", "name": "a\"b", "ts": 1, "dur": 1})",            // an escape in a field it reads
      "{\"ph\": \"X\", \"name\": \"caf\xC3\xA9\", \"ts\": 1, \"dur\": 1}",  // not ASCII
      "{\"ph\": \"X\", \"name\": \"a\tb\", \"ts\": 1, \"dur\": 1}",    // a raw control character
      R"({"ph": "X", "ts": "1", "dur": 1})",                           // a wrong type
      R"({"ph": "X", "ts": 1, "dur": 1, "ts": 2})",                    // a duplicate key
      R"({"ph": "X", "ts": 1, "dur": 1, "args": {"correlation": 1.5}})",
      R"({"ph": "C", "ts": 1, "args": {"a": "x"}})",                   // a counter that is no number
      R"({"ph": "X", "ts": 1, "dur": 1,})",                            // a trailing comma
      R"({"ph": "X", "ts": 01, "dur": 1})",
      R"({"ts": 1})",                                                  // no phase
      R"({"ph": "X", "ts": 1, "x": [1, 2}})",                          // mismatched brackets
      R"({"ph": "X", "ts": 1, "pid": 12345678901234567890})",          // too long for the fast path
  };
  for (const std::string& event : declined) EXPECT_EQ(read_plain(event).length, 0u) << event;
  // Escapes in values it skips are fine.
  EXPECT_GT(read_plain(R"({"ph": "X", "ts": 1, "dur": 1, "note": "a\"b\u00e9"})").length, 0u);
}

// Kineto's separators (": " and ", ") are matched at once; any other white
// space around them reads the same, and a cut anywhere is declined.
TEST(PlainEventReader, ReadsSeparatorsWithAnyWhiteSpace) {
  const std::string kineto =
      R"j({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"grid": [1, 2, 3], "x": {"a": 1, "b": [ ]}, "correlation": 9}})j";
  PlainRead reference = read_plain(kineto);
  ASSERT_EQ(reference.length, kineto.size());
  EXPECT_EQ(reference.args.correlation, 9);
  for (std::string space : {"", " ", "  ", "\n    ", "\t", " \r\n"}) {
    for (std::string separator : {": ", ", "}) {
      // Every such separator written with `space` after its character.
      std::string event;
      for (size_t i = 0; i < kineto.size(); ++i) {
        if (kineto.compare(i, 2, separator) == 0) {
          event += separator[0] + space;
          ++i;
        } else {
          event += kineto[i];
        }
      }
      PlainRead read = read_plain(event);
      ASSERT_EQ(read.length, event.size()) << event;
      EXPECT_EQ(read.fields.name, "k");
      EXPECT_EQ(read.fields.tid.number, 7);
      EXPECT_EQ(read.fields.dur_ns, 2000);
      EXPECT_EQ(read.args.correlation, 9) << event;
    }
  }
  for (size_t available = 0; available < kineto.size(); ++available) {
    std::string padded = kineto + std::string(PlainEventReader::kReadAhead, '\0');
    EventFields fields;
    EventArgs args;
    PlainEventCounts counts;
    EXPECT_EQ(PlainEventReader().read(padded.data(), available, fields, args, counts), 0u) << available;
  }
  for (std::string invalid : {R"({"ph": "X", "ts": 1, "dur": 1, "args": {"grid": [1, ]}})",
                                     R"({"ph": "X", "ts": 1, "dur": 1, , "pid": 1})", R"({"ph": "X", "ts": 1, "dur": 1 "pid": 1})",
                                     R"({"ph": "X", "ts": 1, "dur": 1, "pid":: 1})", R"({"ph": "X", "ts": 1, "dur": 1, "pid" 1})"}) {
    EXPECT_EQ(read_plain(invalid).length, 0u) << invalid;
  }
}

// Integers (pid, tid, correlation) are read eight digits at a time: every
// length, sign and ending, and digits running into the end of the text.
TEST(PlainEventReader, ReadsIntegersOfEveryLength) {
  const std::string digits = "9876543210123456789";
  for (size_t length = 1; length <= digits.size(); ++length) {
    for (std::string sign : {"", "-"}) {
      for (std::string lead : {"", "0"}) {
        std::string number = sign + lead + digits.substr(0, length);
        bool plain = number.size() - sign.size() <= 18 && lead.empty();
        std::string event = R"({"ph": "X", "ts": 1, "dur": 1, "tid": )" + number + R"(, "pid": )" + number + "}";
        PlainRead read = read_plain(event);
        ASSERT_EQ(read.length, plain ? event.size() : 0u) << event;
        if (!plain) continue;
        EXPECT_EQ(read.fields.pid.number, std::stoll(number)) << event;
        EXPECT_EQ(read.fields.tid.number, std::stoll(number)) << event;
        // The same digits cut by the end of the text: declined, whatever the read-ahead holds.
        std::string cut = R"({"ph": "X", "ts": 1, "dur": 1, "pid": )" + number;
        std::string padded = cut + "12345678}" + std::string(PlainEventReader::kReadAhead, '\0');
        EventFields fields;
        EventArgs args;
        PlainEventCounts counts;
        EXPECT_EQ(PlainEventReader().read(padded.data(), cut.size(), fields, args, counts), 0u) << cut;
      }
    }
  }
  for (std::string odd : {"0", "7", "-0", "1.5", "1e3", "12345678.0", "123456789E1", "-", "1-2", "00"}) {
    std::string event = R"({"ph": "X", "ts": 1, "dur": 1, "pid": )" + odd + "}";
    bool plain = odd == "0" || odd == "7";
    EXPECT_EQ(read_plain(event).length, plain ? event.size() : 0u) << event;
  }
  // Right after the digits: what ends a value.
  for (std::string end : {"}", " }", "\n}"}) {
    std::string event = R"({"ph": "X", "ts": 1, "dur": 1, "pid": 12345678)" + end;
    PlainRead read = read_plain(event);
    ASSERT_EQ(read.length, event.size()) << event;
    EXPECT_EQ(read.fields.pid.number, 12345678);
  }
}

// Imports `json` both ways: the same Run or the same error.
void expect_same_import(const std::string& json, const ChromeTraceOptions& base = {}) {
  ChromeTraceOptions plain = base;
  ChromeTraceOptions simdjson_only = base;
  simdjson_only.plain_event_reader = false;
  std::string plain_error, simdjson_error;
  stepscope::Run plain_run, simdjson_run;
  try {
    plain_run = import_chrome_trace_bytes(json, "trace.json", plain);
  } catch (const InputError& error) {
    plain_error = error.what();
  }
  try {
    simdjson_run = import_chrome_trace_bytes(json, "trace.json", simdjson_only);
  } catch (const InputError& error) {
    simdjson_error = error.what();
  }
  EXPECT_EQ(plain_error, simdjson_error) << json;
  if (plain_error.empty()) {
    EXPECT_EQ(test::run_difference(plain_run, simdjson_run), "") << json;
  }
}

// Indentation as Kineto writes it (a newline, then spaces): runs of every
// length up to 20, cut by the end of the text anywhere (declined: spaces of
// the read-ahead are not the event's).
TEST(PlainEventReader, ReadsRunsOfSpacesOfEveryLength) {
  for (size_t run = 0; run <= 20; ++run) {
    std::string indent = "\n" + std::string(run, ' ');
    std::string event = "{" + indent + R"("ph": "X", "name": "n",)" + indent + R"("ts": 1, "dur": 2, "args": {)" + indent +
                        R"("correlation": 9,)" + indent + "\t" + indent + R"("bytes": 3)" + indent + "}" + indent + "}";
    PlainRead read = read_plain(event);
    ASSERT_EQ(read.length, event.size()) << event;
    EXPECT_EQ(read.fields.dur_ns, 2000);
    EXPECT_EQ(read.args.correlation, 9);
    EXPECT_EQ(read.args.bytes, 3);
    for (size_t available = 0; available < event.size(); ++available) {
      std::string padded = event + std::string(PlainEventReader::kReadAhead, ' ');
      EventFields fields;
      EventArgs args;
      PlainEventCounts counts;
      EXPECT_EQ(PlainEventReader().read(padded.data(), available, fields, args, counts), 0u) << available << event;
    }
  }
}

// Timestamps' fractions (Kineto writes three digits, Python's json one to
// three): every count of digits, and what may follow, read as simdjson
// reads them.
TEST(PlainEventReader, ReadsTimestampFractionsOfEveryLength) {
  for (std::string fraction : {"", ".", ".1", ".12", ".123", ".1234", ".123456", ".999", ".0005", ".12e1", ".12.3", ".1x", ".5", ".09", ".1-"}) {
    for (std::string end : {"", " ", "\n"}) {
      std::string ts = "1712195495519689" + fraction;
      std::string event = R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": )" + ts + end + R"(, "dur": 63)" + fraction + end + "}";
      PlainRead read = read_plain(event);
      bool short_fraction = fraction.size() >= 2 && fraction.size() <= 4 && fraction.find_first_not_of("0123456789", 1) == std::string::npos;
      if (short_fraction) {
        ASSERT_EQ(read.length, event.size()) << event;
        uint64_t thousandths = std::stoull((fraction.substr(1) + "00").substr(0, 3));
        EXPECT_EQ(*read.fields.ts_ns, int64_t{1712195495519689} * 1000 + static_cast<int64_t>(thousandths)) << event;
        EXPECT_EQ(*read.fields.dur_ns, 63000 + static_cast<int64_t>(thousandths)) << event;
      }
      expect_same_import("[" + event + "]");
    }
  }
}

TEST(PlainEventReader, ImportsOddEventsAsSimdjsonDoes) {
  const std::vector<std::string> events = {
      R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1.0005, "dur": 2e1, "args": {"Input Dims": [[1]], "correlation": 3, "bytes": -1}})",
      R"({"args": {"name": "proc"}, "ph": "M", "name": "process_name", "pid": "Spans", "tid": 0, "ts": 0})",
      R"({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": 5}})",
      R"({"ph": "C", "name": "mem", "pid": 1, "ts": 3, "args": {"a": 1.5, "b": -0.0, "c": 1e300, "d": 0.1}})",
      R"({"ph": "C", "name": "mem", "pid": 1, "ts": 3, "args": {"a": "x", "b": 2}})",
      R"({"ph": "s", "id": 7, "pid": 1, "tid": 2, "ts": 1, "cat": "ac2g", "name": "ac2g"})",
      R"({"ph": "f", "id": 7, "pid": 1, "tid": 2, "ts": 1.5, "cat": "ac2g", "name": "ac2g", "bp": "e"})",
      R"({"ph": "X", "name": "esc\u00e9", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": {"correlation": 1.0}})",
      R"({"ph": "B", "name": "r", "pid": 1, "tid": 2, "ts": 4, "args": 5})",
      R"({"ph": "E", "pid": 1, "tid": 2, "ts": 6})",
      R"({"ph": "i", "pid": 1, "tid": 2, "ts": 6, "s": "t"})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": -1, "dur": -5, "args": {}})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": {"a": {"b": [true, false, null, "x"]}}})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": []})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1})",
      R"({"ph": "X", "name": "n", "pid": 1.5, "tid": 2, "ts": 1, "dur": 1})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1e400, "dur": 1})",
      R"({ "ph" : "X" ,"name":"n","pid":1,"tid":2,"ts":1,"dur":1 , "args" : { "bytes" : 8 } })",
      // Timestamps of every length around the eight-digit steps, and fractions past nanoseconds.
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 12345678, "dur": 123456789})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1712195497027744, "dur": 0.0005})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 1712195497027744.125, "dur": 99999999.9999})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 17121954970277441, "dur": 1234567812345678})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": 9223372036854775, "dur": 0})",
      R"({"ph": "X", "name": "n", "pid": 1, "tid": 2, "ts": -1712195497027744.5, "dur": 00})",
  };
  std::string all = "[";
  for (const std::string& event : events) {
    expect_same_import("[" + event + "]");
    expect_same_import("[" + event + "]", ChromeTraceOptions{.strict = true});
    all += (all.size() > 1 ? ",\n" : "") + event;
  }
  expect_same_import(all + "]");
  expect_same_import(all + "]", ChromeTraceOptions{.chunk_size = 7});
}

// The promise of the fast path: every real trace imports identically.
TEST(PlainEventReader, EveryTestTraceImportsAsWithSimdjsonAlone) {
  const std::vector<std::string> traces = test::every_kineto_trace();
  SKIP_WITHOUT_KINETO_TRACES(traces.empty());
  size_t compared = 0;
  for (const std::string& name : traces) {
    ChromeTraceOptions simdjson_only;
    simdjson_only.plain_event_reader = false;
    stepscope::Run plain = import_chrome_trace(name);
    stepscope::Run reference = import_chrome_trace(name, simdjson_only);
    EXPECT_EQ(test::run_difference(plain, reference), "") << name;
    ++compared;
  }
  EXPECT_GT(compared, 20u);
}

}  // namespace
}  // namespace stepscope
