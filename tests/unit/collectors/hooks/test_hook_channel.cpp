// Decoding the hooks' datagrams (untrusted input) and turning them into Run
// parts; and the socket end to end.
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/hooks/channel.hpp"
#include "collectors/hooks/events.hpp"

namespace {

using stepscope::decode_hook_datagram;

TEST(HookEvents, DecodesEveryRecordType) {
  auto d = decode_hook_datagram(
      "SS1 42\n"
      "D 43 100 200 16 1024\n"
      "F 43 200 300\nB 43 300 400\nO 43 400 450\n"
      "S 43 100 450 16 1024 5000 -1\n"
      "R 43 210 220 my range; <b>\n"
      "W 44 10 20 8\n"
      "G 43 460 470 2\n"
      "E 43 480 490\n"
      "M 43 450 450 7000 -1\n"
      "P rank 3\nX dataloader TypeError: boom\nN 7");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->pid, 42);
  EXPECT_EQ(d->bad_records, 0u);
  ASSERT_EQ(d->spans.size(), 8u);
  EXPECT_EQ(d->spans[0].kind, stepscope::SpanKind::kDataWait);
  EXPECT_EQ(d->spans[4].name, "my range; <b>");
  EXPECT_EQ(d->spans[5].name, "worker_batch");
  EXPECT_EQ(d->spans[6].name, "gc_pause");
  EXPECT_EQ(d->spans[6].kind, stepscope::SpanKind::kOther);
  EXPECT_EQ(d->spans[7].name, "evaluation");
  EXPECT_EQ(d->spans[7].kind, stepscope::SpanKind::kOther);
  ASSERT_EQ(d->steps.size(), 1u);
  EXPECT_EQ(d->steps[0].samples, 16);
  EXPECT_EQ(d->steps[0].device_peak_bytes, -1);
  EXPECT_EQ(d->batches.at(0), std::make_pair(int64_t{16}, int64_t{1024}));
  ASSERT_EQ(d->late_peaks.size(), 1u);
  EXPECT_EQ(d->late_peaks[0].end_ns, 450);
  EXPECT_EQ(d->late_peaks[0].host_peak_bytes, 7000);
  EXPECT_EQ(d->late_peaks[0].device_peak_bytes, -1);
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
                                        {'O', 43, 400, 450}, {'S', 43, 100, 450, 16, 1024, 5000, -1},
                                        {'W', 44, 10, 20, 8}, {'G', 43, 460, 470, 2}, {'E', 43, 480, 490},
                                        {'M', 43, 450, 450, 7000, -1}});
  auto b = decode_hook_datagram(binary);
  auto t = decode_hook_datagram(
      "SS1 42\nD 43 100 200 16 1024\nF 43 200 300\nB 43 300 400\nO 43 400 450\nS 43 100 450 16 1024 5000 -1\n"
      "W 44 10 20 8\nG 43 460 470 2\nE 43 480 490\nM 43 450 450 7000 -1");
  ASSERT_TRUE(b && t);
  EXPECT_EQ(b->pid, 42);
  EXPECT_EQ(b->bad_records, 0u);
  ASSERT_EQ(b->spans.size(), t->spans.size());
  for (size_t i = 0; i < b->spans.size(); ++i) {
    EXPECT_EQ(b->spans[i].kind, t->spans[i].kind) << i;
    EXPECT_EQ(b->spans[i].name, t->spans[i].name) << i;
    EXPECT_EQ(b->spans[i].end_ns, t->spans[i].end_ns) << i;
  }
  ASSERT_EQ(b->steps.size(), 1u);
  EXPECT_EQ(b->steps[0].host_peak_bytes, 5000);
  EXPECT_EQ(b->steps[0].device_peak_bytes, -1);
  EXPECT_EQ(b->batches, t->batches);
  ASSERT_EQ(b->late_peaks.size(), 1u);
  EXPECT_EQ(b->late_peaks[0].host_peak_bytes, t->late_peaks.at(0).host_peak_bytes);
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
      {'S', 43, 1, 2, -2, 0, 0, 0},  // a negative count
      {'G', 43, 1, 2, 3},            // no such generation
      {'M', 43, 2, 2, -3, 0},        // a negative peak
      {'M', 43, 2, 2, 5, 5, 5},      // a value the type does not carry
      {'B', 43, 1, 2},               // fine
  });
  data += "abc";  // a record cut short
  auto d = decode_hook_datagram(data);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bad_records, 10u);
  EXPECT_TRUE(d->late_peaks.empty());
  ASSERT_EQ(d->spans.size(), 1u);
  EXPECT_EQ(d->spans[0].kind, stepscope::SpanKind::kBackward);
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
      "S 43 1 2 -5 0 0 0\n"             // negative samples
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
  EXPECT_EQ(d->bad_records, 15u);
  EXPECT_EQ(d->spans.size(), 1u);
}

TEST(HookEvents, BuilderAddsSpansCountersAndFacts) {
  stepscope::Run run;
  stepscope::HookRunBuilder builder;
  builder.add(run, *decode_hook_datagram("SS1 42\nD 43 100 200 16 -1\nS 43 100 450 16 -1 5000 -1\nP rank 1\nZ"));
  builder.add(run, *decode_hook_datagram("SS1 42\nS 43 450 900 16 -1 6000 -1\nN 3"));
  // Read at exit for a step sent without its peaks: a value at that step's end.
  builder.add(run, *decode_hook_datagram("SS1 42\nS 43 900 950 16 -1 -1 -1\nM 43 950 950 7000 -1"));
  builder.add_bad_datagram(run);
  ASSERT_EQ(run.spans.size(), 4u);
  EXPECT_EQ(run.spans[1].kind, stepscope::SpanKind::kStep);
  EXPECT_EQ(run.spans[1].pid, 42);
  EXPECT_EQ(run.metadata.at("hooks.42.rank"), "1");
  EXPECT_EQ(run.metadata.at("hooks_bad_records"), "2");
  EXPECT_EQ(run.metadata.at("hooks_dropped_records"), "3");
  // One track per (name, pid), unknown values left out.
  size_t samples_values = 0;
  for (const auto& v : run.counter_values) {
    if (run.strings.get(run.counter_tracks.at(v.track).name) == "step_samples") ++samples_values;
  }
  EXPECT_EQ(samples_values, 3u);
  std::vector<std::pair<int64_t, double>> host_peaks;
  for (const auto& v : run.counter_values) {
    if (run.strings.get(run.counter_tracks.at(v.track).name) == "step_peak_rss") host_peaks.emplace_back(v.ts_ns, v.value);
  }
  EXPECT_EQ(host_peaks, (std::vector<std::pair<int64_t, double>>{{450, 5000}, {900, 6000}, {950, 7000}}));
  for (const auto& t : run.counter_tracks) EXPECT_NE(run.strings.get(t.name), "step_tokens");
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
  send("SS1 7\nS 8 10 20 4 -1 -1 -1");
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
