// Decoding the hooks' datagrams (untrusted input) and turning them into Run
// parts; and the socket end to end.
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "collectors/hooks/channel.hpp"
#include "collectors/hooks/events.hpp"

namespace {

using stepscope::decode_hook_datagram;

TEST(HookEvents, DecodesEveryRecordType) {
  auto d = decode_hook_datagram(
      "SS1 42\n"
      "D 43 100 200 16 1024\n"
      "F 43 200 300\nB 43 300 400\nO 43 400 450 140237\n"
      "K 43 450 450 140237\nA 43 455 455\n"
      "S 43 460 460 16 -1\n"
      "R 43 210 220 my range; <b>\n"
      "W 44 10 20 8\n"
      "G 43 460 470 2\n"
      "M 43 450 450 7000 -1\n"
      "P rank 3\nX dataloader TypeError: boom\nN 7");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->pid, 42);
  EXPECT_EQ(d->bad_records, 0u);
  ASSERT_EQ(d->spans.size(), 3u);
  EXPECT_EQ(d->spans[0].name, "my range; <b>");
  EXPECT_EQ(d->spans[0].kind, stepscope::SpanKind::kUserRange);
  EXPECT_EQ(d->spans[1].name, "worker_batch");
  EXPECT_EQ(d->spans[2].name, "gc_pause");
  EXPECT_EQ(d->spans[2].kind, stepscope::SpanKind::kOther);
  std::string types;
  for (const stepscope::HookPlace& place : d->places) types += place.type;
  EXPECT_EQ(types, "DFBOKASM");
  EXPECT_EQ(d->places[0].a, 16);
  EXPECT_EQ(d->places[0].b, 1024);
  EXPECT_EQ(d->places[3].a, 140237);
  EXPECT_EQ(d->places[6].b, -1);
  EXPECT_EQ(d->places[7].end_ns, 450);
  EXPECT_EQ(d->places[7].a, 7000);
  EXPECT_EQ(d->facts.at(0).first, "rank");
  EXPECT_EQ(d->dropped_by_sender, 7u);
  EXPECT_EQ(d->disabled.at(0), "dataloader TypeError: boom");
}

TEST(HookEvents, RefusesBadHeaders) {
  for (const char* bad : {"", "SS3 1\n", "SS2 x\n", "SS1 x\n", "SS1 0\n", "SS1 -5\n", "SS1 99999999999999\n", "ss1 1"}) {
    EXPECT_FALSE(decode_hook_datagram(bad)) << bad;
  }
}

// A binary datagram as the hooks build it: the header, then eight int64 a record.
std::string binary_datagram(const std::vector<std::vector<int64_t>>& records) {
  std::string data = "SS2 42\n";
  for (std::vector<int64_t> record : records) {
    record.resize(8, 0);
    data.append(reinterpret_cast<const char*>(record.data()), record.size() * sizeof(int64_t));
  }
  return data;
}

TEST(HookEvents, DecodesBinaryRecordsAsTheirTextTwins) {
  std::string binary = binary_datagram({{'D', 43, 100, 200, 16, 1024}, {'F', 43, 200, 300}, {'B', 43, 300, 400},
                                        {'O', 43, 400, 450, 140237}, {'K', 43, 450, 450, 140237},
                                        {'A', 43, 455, 455}, {'S', 43, 460, 460, 16, -1},
                                        {'W', 44, 10, 20, 8}, {'G', 43, 460, 470, 2}, {'M', 43, 450, 450, 7000, -1}});
  auto b = decode_hook_datagram(binary);
  auto t = decode_hook_datagram(
      "SS1 42\nD 43 100 200 16 1024\nF 43 200 300\nB 43 300 400\nO 43 400 450 140237\nK 43 450 450 140237\n"
      "A 43 455 455\nS 43 460 460 16 -1\nW 44 10 20 8\nG 43 460 470 2\nM 43 450 450 7000 -1");
  ASSERT_TRUE(b && t);
  EXPECT_EQ(b->pid, 42);
  EXPECT_EQ(b->bad_records, 0u);
  ASSERT_EQ(b->spans.size(), t->spans.size());
  for (size_t i = 0; i < b->spans.size(); ++i) {
    EXPECT_EQ(b->spans[i].kind, t->spans[i].kind) << i;
    EXPECT_EQ(b->spans[i].name, t->spans[i].name) << i;
    EXPECT_EQ(b->spans[i].end_ns, t->spans[i].end_ns) << i;
  }
  ASSERT_EQ(b->places.size(), 8u);
  ASSERT_EQ(b->places.size(), t->places.size());
  for (size_t i = 0; i < b->places.size(); ++i) {
    const stepscope::HookPlace& x = b->places[i];
    const stepscope::HookPlace& y = t->places[i];
    EXPECT_EQ(std::tie(x.type, x.tid, x.start_ns, x.end_ns, x.a, x.b),
              std::tie(y.type, y.tid, y.start_ns, y.end_ns, y.a, y.b)) << i;
  }
  // The same bytes one past an aligned address decode the same.
  std::string shifted = " " + binary;
  auto s = decode_hook_datagram(std::string_view(shifted).substr(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->spans.size(), b->spans.size());
}

TEST(HookEvents, CountsAndDropsBadBinaryRecords) {
  std::string data = binary_datagram({
      {'F', 43, 300, 200},           // ends before it starts
      {'F', 43, 1, 2, 7},            // a value the type does not carry
      {'R', 43, 1, 2},               // ranges have names: text only
      {'Z', 43, 1, 2},               // unknown type
      {-1, 43, 1, 2},                // not a type at all
      {'S', 43, 1, 1, -2, 0, 0, 0},  // a negative count
      {'E', 43, 1, 2},               // evaluation: the recorder's to say, not the sender's
      {'G', 43, 1, 2, 3},            // no such generation
      {'M', 43, 2, 2, -3, 0},        // a negative peak
      {'M', 43, 2, 2, 5, 5, 5},      // a value the type does not carry
      {'B', 43, 1, 2},               // fine
  });
  data += "abc";  // a record cut short
  auto d = decode_hook_datagram(data);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bad_records, 11u);
  ASSERT_EQ(d->places.size(), 1u);
  EXPECT_EQ(d->places[0].type, 'B');
}

TEST(HookEvents, CountsAndDropsBadRecords) {
  auto d = decode_hook_datagram(
      "SS1 42\n"
      "F 43 300 200\n"                  // ends before it starts
      "F 0 1 2\n"                       // no thread
      "F 43 1 2 extra\n"                // a field too many
      "F 43 1\n"                        // a field short
      "F 43 1 99999999999999999999\n"   // overflows
      "F 43 1 700000000000000000\n"     // longer than a week
      "S 43 1 1 -5 0\n"                 // negative samples
      "O 43 1 2\n"                      // no optimizer
      "D 43 1 2 x 0\n"                  // not a number
      "P Bad-Key v\n"
      "Q 1 2 3\n"
      "\n"
      "R 43 1 2 " + std::string(5000, 'a') + "\n"
      "N -1\n"
      "G 43 1 2 3\n"                   // no such generation
      "G 43 1 2\n"                     // no generation
      "F 43 1 2");                      // the one good record
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bad_records, 16u);
  EXPECT_EQ(d->places.size(), 1u);
}

TEST(HookEvents, BuilderAssemblesStepsAcrossDatagramsWithCountersAndFacts) {
  stepscope::Run run;
  stepscope::HookRunBuilder builder;
  // The first round of optimizers: its step ends when the next batch closes it, and the
  // peaks read inside it go to it.
  builder.add(run, *decode_hook_datagram("SS1 42\nD 43 100 200 16 -1\nF 43 200 300\nB 43 300 400\n"
                                         "O 43 400 450 7\nM 43 450 450 5000 -1\nP rank 1\nZ"));
  builder.add(run, *decode_hook_datagram("SS1 42\nD 43 450 500 16 -1\nO 43 850 900 7\nM 43 900 900 6000 -1\nN 3"));
  // The exit's read, after the last step: it goes to that step, at finish().
  builder.add(run, *decode_hook_datagram("SS1 42\nD 43 900 950 16 -1\nO 43 950 1000 7\nM 43 1010 1010 7000 -1"));
  builder.add_bad_datagram(run);
  size_t steps_before_finish = 0;
  for (const auto& span : run.spans) steps_before_finish += span.kind == stepscope::SpanKind::kStep;
  EXPECT_EQ(steps_before_finish, 3u);
  builder.finish(run);
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (const auto& span : run.spans) {
    if (span.kind == stepscope::SpanKind::kStep) steps.emplace_back(span.start_ns, span.end_ns);
    EXPECT_EQ(span.pid, 42);
  }
  EXPECT_EQ(steps, (std::vector<std::pair<int64_t, int64_t>>{{100, 450}, {450, 900}, {900, 1000}}));
  EXPECT_EQ(run.metadata.at("hooks.42.rank"), "1");
  EXPECT_EQ(run.metadata.at("hooks_bad_records"), "2");
  EXPECT_EQ(run.metadata.at("hooks_dropped_records"), "3");
  auto values = [&](std::string_view name) {
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& v : run.counter_values) {
      if (run.strings.get(run.counter_tracks.at(v.track).name) == name) out.emplace_back(v.ts_ns, v.value);
    }
    return out;
  };
  EXPECT_EQ(values("step_samples"), (std::vector<std::pair<int64_t, double>>{{450, 16}, {900, 16}, {1000, 16}}));
  EXPECT_EQ(values("step_peak_rss"), (std::vector<std::pair<int64_t, double>>{{450, 5000}, {900, 6000}, {1000, 7000}}));
  // One track per (name, pid), unknown values left out.
  for (const auto& t : run.counter_tracks) EXPECT_NE(run.strings.get(t.name), "step_tokens");
}

TEST(HookEvents, BuilderAssemblesStepsOfABoundedNumberOfProcesses) {
  stepscope::Run run;
  stepscope::HookRunBuilder builder;
  for (size_t pid = 1; pid <= stepscope::HookRunBuilder::kMaxProcesses + 1; ++pid) {
    builder.add(run, *decode_hook_datagram(fmt::format("SS1 {}\nS 9 100 100 1 -1\nS 9 200 200 1 -1", pid)));
  }
  builder.finish(run);
  EXPECT_EQ(run.spans.size(), 2 * stepscope::HookRunBuilder::kMaxProcesses);
  EXPECT_EQ(run.metadata.at("hooks_bad_records"), "2");
}

TEST(HookChannel, ReceivesDatagramsAndGivesTheEnvironment) {
  stepscope::HookChannel channel("/nonexistent/python");
  auto env = channel.child_environment();
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0], "STEPSCOPE_CHANNEL=" + channel.socket_path());
  EXPECT_EQ(env[1].rfind("PYTHONPATH=/nonexistent/python/stepscope_boot:/nonexistent/python", 0), 0u);

  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, channel.socket_path().c_str());
  auto send = [&](std::string_view text) {
    ASSERT_EQ(sendto(fd, text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              static_cast<ssize_t>(text.size()));
  };
  send("SS1 7\nS 8 20 20 4 -1");
  send("garbage");
  send(std::string(100000, 'x'));  // larger than any real datagram
  stepscope::Run run;
  channel.finish(run, {}, 0);
  close(fd);
  ASSERT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.metadata.at("hooks"), "on");
  EXPECT_EQ(run.metadata.at("hooks_bad_records"), "2");
}

TEST(HookChannel, WithoutHooksItIsInertAndSaysWhy) {
  stepscope::HookChannel channel("");
  EXPECT_TRUE(channel.child_environment().empty());
  stepscope::Run run;
  channel.poll(run, {}, 0);
  EXPECT_EQ(run.metadata.at("hooks").rfind("off: python hooks not found", 0), 0u);
}

}  // namespace
