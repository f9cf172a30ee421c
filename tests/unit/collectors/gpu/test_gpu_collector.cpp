// The recorder's side of the GPU collector, without a GPU: portable records
// -> file bytes -> decoder (incremental, truncated, corrupt) -> Run spans and
// flows; and the GpuSource reading a folder as the injected library fills it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/gpu/file_decoder.hpp"
#include "collectors/gpu/records.hpp"
#include "collectors/gpu/run_builder.hpp"
#include "collectors/gpu/source.hpp"

namespace {

using namespace stepscope;
using gpu::Activity;
using gpu::RecordType;

constexpr int64_t kPid = 4242;
constexpr int64_t kTid = 4250;

Activity api_call(uint32_t correlation, uint32_t name, int64_t start, int64_t end) {
  Activity a;
  a.type = RecordType::kApiCall;
  a.start_ns = start;
  a.end_ns = end;
  a.track = kTid;
  a.correlation = correlation;
  a.name = name;
  a.sub[0] = static_cast<uint8_t>(gpu::ApiDomain::kRuntime);
  return a;
}

Activity device_work(RecordType type, uint32_t correlation, int64_t start, int64_t end, uint32_t stream = 7) {
  Activity a;
  a.type = type;
  a.start_ns = start;
  a.end_ns = end;
  a.device = 1;
  a.context = 3;
  a.track = stream;
  a.correlation = correlation;
  return a;
}

// A file as the library writes it: header, clock, names, then activity; the
// kernel comes before its launch, as CUPTI's buffers may deliver it.
std::string sample_file(int64_t clock_offset = 0) {
  std::string out;
  gpu::append_file_header(out, kPid);
  gpu::append_clock(out, gpu::Clock{1000, 1000 + clock_offset, 0});
  gpu::append_string(out, 1, "cudaLaunchKernel");
  gpu::append_string(out, 2, "void add<float>(float*, \"x\")");
  gpu::append_string(out, 3, "cudaMemcpyAsync");
  Activity kernel = device_work(RecordType::kKernel, 11, 5000, 9000);
  kernel.name = 2;
  gpu::append_activity(out, kernel);
  gpu::append_activity(out, api_call(11, 1, 4000, 4500));
  Activity copy = device_work(RecordType::kMemcpy, 12, 9500, 9700);
  copy.bytes = 4096;
  copy.sub[0] = 1;  // HtoD
  copy.sub[1] = 1;  // from pageable
  copy.sub[2] = 3;  // to device
  gpu::append_activity(out, api_call(12, 3, 9400, 9800));
  gpu::append_activity(out, copy);
  Activity set = device_work(RecordType::kMemset, 0, 9900, 9950);
  set.bytes = 128;
  set.sub[0] = 3;
  gpu::append_activity(out, set);
  return out;
}

std::vector<gpu::Record> decode_all(const std::string& bytes, gpu::FileDecoder& decoder) {
  std::vector<gpu::Record> records;
  decoder.feed(bytes, records);
  return records;
}

stepscope::Run build(const std::string& bytes) {
  stepscope::Run run;
  gpu::FileDecoder decoder("test.gpu");
  gpu::RunBuilder builder;
  for (const gpu::Record& r : decode_all(bytes, decoder)) builder.add(run, decoder.pid(), r);
  builder.finish(run);
  EXPECT_EQ(decoder.error(), "");
  return run;
}

const Span* find_span(const stepscope::Run& run, SpanKind kind) {
  for (const Span& s : run.spans) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

TEST(GpuRecords, DecodesWhatWasEncoded) {
  gpu::FileDecoder decoder("x.gpu");
  auto records = decode_all(sample_file(), decoder);
  EXPECT_EQ(decoder.pid(), kPid);
  ASSERT_EQ(records.size(), 9u);
  const auto& kernel = std::get<Activity>(records[4]);
  EXPECT_EQ(kernel.type, RecordType::kKernel);
  EXPECT_EQ(kernel.start_ns, 5000);
  EXPECT_EQ(kernel.end_ns, 9000);
  EXPECT_EQ(kernel.device, 1u);
  EXPECT_EQ(kernel.track, 7);
  EXPECT_EQ(kernel.correlation, 11u);
  EXPECT_EQ(std::get<gpu::TextRecord>(records[2]).text, "void add<float>(float*, \"x\")");
  EXPECT_EQ(decoder.pending_bytes(), 0u);
}

TEST(GpuRecords, FeedingByteByByteGivesTheSameRecords) {
  std::string file = sample_file();
  gpu::FileDecoder whole("a.gpu"), bytewise("b.gpu");
  auto expected = decode_all(file, whole);
  std::vector<gpu::Record> got;
  for (char c : file) bytewise.feed(std::string_view(&c, 1), got);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::get<Activity>(got.back()).bytes, 128u);
  EXPECT_EQ(bytewise.pending_bytes(), 0u);
}

TEST(GpuRecords, ATruncatedTailIsPendingNotAnError) {
  std::string file = sample_file();
  file.resize(file.size() - 3);  // a process killed in the middle of its last write
  gpu::FileDecoder decoder("cut.gpu");
  auto records = decode_all(file, decoder);
  EXPECT_EQ(records.size(), 8u);  // all but the memset
  EXPECT_EQ(decoder.error(), "");
  EXPECT_EQ(decoder.pending_bytes(), gpu::kRecordHeaderSize + gpu::kActivityPayload - 3);
  EXPECT_EQ(decoder.pending_offset(), file.size() - decoder.pending_bytes());
}

TEST(GpuRecords, CorruptionStopsTheFileWithItsOffset) {
  gpu::FileDecoder bad_magic("m.gpu");
  decode_all("NOTAGPU1........", bad_magic);
  EXPECT_NE(bad_magic.error().find("m.gpu: byte 0: not a stepscope GPU activity file"), std::string::npos)
      << bad_magic.error();

  std::string file = sample_file();
  size_t good = file.size();
  file += std::string("\x10\x00\x00\x00\x63", 5) + std::string(16, 'x');  // unknown type 99
  gpu::FileDecoder unknown("u.gpu");
  auto records = decode_all(file, unknown);
  EXPECT_EQ(records.size(), 9u);  // everything before the bad record
  EXPECT_EQ(unknown.error(), "u.gpu: byte " + std::to_string(good) + ": unknown record type 99");

  std::string wrong_length;
  gpu::append_file_header(wrong_length, kPid);
  wrong_length += std::string("\x04\x00\x00\x00\x05", 5) + "abcd";  // a kernel of 4 bytes
  gpu::FileDecoder short_record("s.gpu");
  decode_all(wrong_length, short_record);
  EXPECT_NE(short_record.error().find("byte 16: activity record of type 5 has length 4"), std::string::npos)
      << short_record.error();

  std::string huge;
  gpu::append_file_header(huge, kPid);
  huge += std::string("\xff\xff\xff\x7f\x05", 5);
  gpu::FileDecoder too_long("h.gpu");
  decode_all(huge, too_long);
  EXPECT_NE(too_long.error().find("over the limit"), std::string::npos) << too_long.error();
}

TEST(GpuRunBuilder, MakesSpansAndFlowsLikeTheImporter) {
  stepscope::Run run = build(sample_file());
  ASSERT_EQ(run.spans.size(), 5u);
  const Span* kernel = find_span(run, SpanKind::kKernel);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->pid, 1);  // the device
  EXPECT_EQ(kernel->tid, 7);  // the stream
  EXPECT_EQ(run.strings.get(kernel->name), "void add<float>(float*, \"x\")");
  EXPECT_EQ(kernel->correlation, (kPid << 32) | 11);
  EXPECT_EQ(kernel->start_ns, 5000);
  EXPECT_EQ(kernel->end_ns, 9000);

  const Span* launch = find_span(run, SpanKind::kRuntimeCall);
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->pid, kPid);
  EXPECT_EQ(launch->tid, kTid);
  EXPECT_EQ(run.strings.get(launch->name), "cudaLaunchKernel");
  EXPECT_EQ(launch->correlation, kernel->correlation);

  const Span* copy = find_span(run, SpanKind::kMemcpy);
  ASSERT_TRUE(copy);
  EXPECT_EQ(run.strings.get(copy->name), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(run.strings.get(copy->detail), "HtoD Pageable");
  EXPECT_EQ(copy->bytes, 4096);

  const Span* set = find_span(run, SpanKind::kMemset);
  ASSERT_TRUE(set);
  EXPECT_EQ(run.strings.get(set->name), "Memset (Device)");
  EXPECT_EQ(set->bytes, 128);
  EXPECT_EQ(set->correlation, 0);

  // One ac2g flow per launch, whichever came first in the file.
  ASSERT_EQ(run.flows.size(), 2u);
  for (const Flow& flow : run.flows) {
    EXPECT_EQ(run.strings.get(flow.kind), "ac2g");
    EXPECT_EQ(run.spans[flow.from].kind, SpanKind::kRuntimeCall);
    EXPECT_EQ(run.spans[flow.from].correlation, run.spans[flow.to].correlation);
  }
  // The device's track is named as the importer names Kineto's.
  ASSERT_TRUE(run.find_process(1));
  EXPECT_EQ(run.strings.get(run.find_process(1)->command), "GPU 1");
  ASSERT_TRUE(run.find_thread(1, 7));
  EXPECT_EQ(run.strings.get(run.find_thread(1, 7)->name), "stream 7");
}

// CUPTI names kernels by their mangled symbols; Kineto's traces, and so the
// recorded runs, show them demangled. Names that are not C++ symbols, and
// symbols that do not demangle, stay as they are.
TEST(GpuRunBuilder, DemanglesKernelNamesAsKinetoDoes) {
  std::string file;
  gpu::append_file_header(file, kPid);
  gpu::append_clock(file, gpu::Clock{1000, 1000, 0});
  gpu::append_string(file, 1, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_");
  gpu::append_string(file, 2, "_Z_not_a_symbol");
  gpu::append_string(file, 3, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)");
  gpu::append_string(file, 4, "_Z3addPfS_");  // the one name launched as a kernel and as an API call
  for (uint32_t name = 1; name <= 4; ++name) {
    Activity kernel = device_work(RecordType::kKernel, 0, 5000 + name, 6000);
    kernel.name = name;
    gpu::append_activity(file, kernel);
    gpu::append_activity(file, kernel);  // a second launch: the same interned name
  }
  gpu::append_activity(file, api_call(0, 4, 4000, 4500));
  stepscope::Run run = build(file);
  const std::string kFill =
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";
  std::vector<std::string> kernels;
  for (const Span& span : run.spans) {
    if (span.kind == SpanKind::kKernel) kernels.push_back(std::string(run.strings.get(span.name)));
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{
                         kFill, kFill, "_Z_not_a_symbol",
                         "_Z_not_a_symbol", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
                         "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", "add(float*, float*)",
                         "add(float*, float*)"}));
  const Span* launch = find_span(run, SpanKind::kRuntimeCall);
  ASSERT_TRUE(launch);
  EXPECT_EQ(run.strings.get(launch->name), "_Z3addPfS_");  // only kernels are demangled
}

TEST(GpuRunBuilder, ConvertsTheActivityClockToMonotonic) {
  stepscope::Run run = build(sample_file(/*clock_offset=*/1'000'000));
  const Span* kernel = find_span(run, SpanKind::kKernel);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->start_ns, 5000 + 1'000'000);
  EXPECT_EQ(kernel->end_ns, 9000 + 1'000'000);

  // A library whose CUPTI stamps with CLOCK_MONOTONIC itself: no shift.
  std::string file;
  gpu::append_file_header(file, kPid);
  gpu::append_clock(file, gpu::Clock{77, 999'999, 1});
  gpu::append_activity(file, device_work(RecordType::kKernel, 0, 100, 200));
  stepscope::Run same = build(file);
  ASSERT_EQ(same.spans.size(), 1u);
  EXPECT_EQ(same.spans[0].start_ns, 100);
}

TEST(GpuRunBuilder, CorrelationsOfDifferentProcessesStayApart) {
  stepscope::Run run;
  gpu::RunBuilder builder;
  for (int64_t pid : {100, 200}) {
    builder.add(run, pid, api_call(5, 0, 10, 20));
    builder.add(run, pid, device_work(RecordType::kKernel, 5, 30, 40));
  }
  ASSERT_EQ(run.flows.size(), 2u);
  EXPECT_EQ(run.spans[run.flows[0].from].pid, 100);
  EXPECT_EQ(run.spans[run.flows[1].from].pid, 200);
  EXPECT_NE(run.spans[0].correlation, run.spans[2].correlation);
}

TEST(GpuRunBuilder, PlacesSyncsOnTheirContextsDevice) {
  stepscope::Run run;
  gpu::RunBuilder builder;
  Activity sync = device_work(RecordType::kSync, 9, 50, 60);
  sync.device = 0;  // syncs carry no device, only their context
  sync.sub[0] = 3;  // stream synchronize
  builder.add(run, kPid, sync);
  EXPECT_EQ(run.spans.size(), 0u);  // the context's device is not known yet
  Activity context;
  context.type = RecordType::kContext;
  context.context = 3;
  context.device = 2;
  builder.add(run, kPid, context);
  ASSERT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.spans[0].kind, SpanKind::kSync);
  EXPECT_EQ(run.spans[0].pid, 2);
  EXPECT_EQ(run.spans[0].tid, 7);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "Stream Sync");

  Activity orphan = sync;
  orphan.context = 99;
  builder.add(run, kPid, orphan);
  builder.finish(run);
  EXPECT_EQ(run.metadata.at("gpu_unplaced_syncs"), "1");
}

TEST(GpuRunBuilder, PairsNvtxRangesAndDropsBadTimes) {
  stepscope::Run run;
  gpu::RunBuilder builder;
  builder.add(run, kPid, gpu::TextRecord{RecordType::kString, 4, "forward <b>"});
  Activity start;
  start.type = RecordType::kMarker;
  start.start_ns = start.end_ns = 100;
  start.track = kTid;
  start.id = 17;
  start.name = 4;
  start.sub[0] = static_cast<uint8_t>(gpu::MarkerPhase::kStart);
  Activity end = start;
  end.start_ns = end.end_ns = 350;
  end.name = 0;
  end.sub[0] = static_cast<uint8_t>(gpu::MarkerPhase::kEnd);
  builder.add(run, kPid, start);
  builder.add(run, kPid, end);
  ASSERT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.spans[0].kind, SpanKind::kUserRange);
  EXPECT_EQ(run.spans[0].start_ns, 100);
  EXPECT_EQ(run.spans[0].end_ns, 350);
  EXPECT_EQ(run.spans[0].tid, kTid);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "forward <b>");

  builder.add(run, kPid, device_work(RecordType::kKernel, 0, 500, 400));  // ends before it starts
  builder.add(run, kPid, start);  // never closed
  builder.finish(run);
  EXPECT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.metadata.at("gpu_bad_timestamps"), "1");
  EXPECT_EQ(run.metadata.at("gpu_unclosed_ranges"), "1");
}

TEST(GpuRunBuilder, NamesCuptiEnumsAsKinetoDoes) {
  EXPECT_STREQ(gpu::memcpy_kind_name(2), "DtoH");
  EXPECT_STREQ(gpu::memcpy_kind_name(10), "PtoP");
  EXPECT_STREQ(gpu::memcpy_kind_name(200), "Unknown");
  EXPECT_STREQ(gpu::memory_kind_name(2), "Pinned");
  EXPECT_STREQ(gpu::sync_type_name(1), "Event Sync");
}

// The source end to end: settings decide the environment; files appear in
// the folder as processes start, grow between polls, and may end cut short.
class GpuSourceTest : public testing::Test {
 protected:
  static GpuSourceSettings on_settings() {
    GpuSourceSettings s;
    s.mode = GpuMode::kOn;
    s.library = "/opt/libstepscope-cupti.so";
    s.driver_present = false;
    return s;
  }
};

TEST_F(GpuSourceTest, OffAndUnbuiltGiveNoEnvironmentAndSayWhy) {
  GpuSourceSettings off = on_settings();
  off.mode = GpuMode::kOff;
  EXPECT_TRUE(GpuSource(off).child_environment().empty());

  GpuSourceSettings unbuilt = on_settings();
  unbuilt.library.clear();
  GpuSource source(unbuilt);
  EXPECT_TRUE(source.child_environment().empty());
  ASSERT_EQ(source.notes().size(), 1u);
  EXPECT_NE(source.notes()[0].find("built without CUPTI"), std::string::npos);

  GpuSourceSettings auto_no_driver = on_settings();
  auto_no_driver.mode = GpuMode::kAuto;
  GpuSource quiet(auto_no_driver);
  EXPECT_TRUE(quiet.child_environment().empty());
  EXPECT_TRUE(quiet.notes().empty());  // auto stays quiet
  stepscope::Run run;
  quiet.poll(run, {}, 0);
  EXPECT_EQ(run.metadata.at("gpu"), "off: no CUDA driver (libcuda.so.1) on this machine");

  GpuSourceSettings nsys = on_settings();
  nsys.existing_injection = "/opt/nsys/libToolsInjection64.so";
  GpuSource other(nsys);
  EXPECT_TRUE(other.child_environment().empty());
  EXPECT_NE(other.notes().at(0).find("libToolsInjection64.so"), std::string::npos);
}

TEST_F(GpuSourceTest, ReadsGrowingAndTruncatedFiles) {
  GpuSource source(on_settings());
  auto env = source.child_environment();
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], "CUDA_INJECTION64_PATH=/opt/libstepscope-cupti.so");
  EXPECT_EQ(env[1], "NVTX_INJECTION64_PATH=/opt/libstepscope-cupti.so");
  EXPECT_EQ(env[2], "STEPSCOPE_GPU_DIR=" + source.dir());
  std::string dir = source.dir();

  std::string file = sample_file();
  size_t half = file.size() / 2;
  std::string path = dir + "/" + std::to_string(kPid) + ".gpu";
  {
    std::ofstream out(path, std::ios::binary);
    out << file.substr(0, half);
  }
  stepscope::Run run;
  source.poll(run, {}, 0);
  size_t first = run.spans.size();
  EXPECT_LT(first, 5u);
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << file.substr(half, file.size() - half - 10);  // the memset record cut short
  }
  source.finish(run, {}, 0);
  EXPECT_EQ(run.spans.size(), 4u);
  EXPECT_EQ(run.flows.size(), 2u);
  EXPECT_EQ(run.metadata.at("gpu"), "on");
  EXPECT_EQ(run.metadata.at("gpu_processes"), "1");
  EXPECT_EQ(run.metadata.at("gpu_truncated_bytes"), std::to_string(gpu::kRecordHeaderSize + gpu::kActivityPayload - 10));
  EXPECT_FALSE(std::filesystem::exists(dir));  // cleaned up
}

TEST_F(GpuSourceTest, SaysWhyNothingCameWithGpuOn) {
  GpuSource source(on_settings());
  stepscope::Run run;
  source.finish(run, {}, 0);
  ASSERT_EQ(source.notes().size(), 1u);
  EXPECT_EQ(source.notes()[0], "--gpu on: no GPU activity recorded: no CUDA driver (libcuda.so.1) on this machine");
}

TEST_F(GpuSourceTest, ReportsACorruptFileAndTheLibrarysNotes) {
  GpuSource source(on_settings());
  std::string file;
  gpu::append_file_header(file, kPid);
  gpu::append_note(file, "CUPTI is already held by CUPTI for nsys");
  size_t bad_at = file.size();
  file += std::string("\x01\x00\x00\x00\x63x", 6);
  {
    std::ofstream out(source.dir() + "/4242.gpu", std::ios::binary);
    out << file;
  }
  stepscope::Run run;
  source.finish(run, {}, 0);
  EXPECT_EQ(run.metadata.at("gpu.4242.note"), "CUPTI is already held by CUPTI for nsys");
  ASSERT_EQ(source.notes().size(), 2u);
  EXPECT_NE(source.notes()[0].find("corrupt"), std::string::npos);
  EXPECT_NE(source.notes()[0].find("byte " + std::to_string(bad_at) + ": unknown record type 99"), std::string::npos) << source.notes()[0];
  EXPECT_EQ(source.notes()[1], "GPU collector in pid 4242: CUPTI is already held by CUPTI for nsys");
}

}  // namespace

namespace {

TEST(GpuRunBuilder, TimesOutOfRangeAreCountedNotWrapped) {
  stepscope::Run run;
  gpu::RunBuilder builder;
  gpu::Clock clock{0, std::numeric_limits<int64_t>::max() - 10, 0};  // a shift that would overflow
  builder.add(run, 4242, clock);
  Activity kernel;
  kernel.type = RecordType::kKernel;
  kernel.start_ns = 100;
  kernel.end_ns = 200;
  builder.add(run, 4242, kernel);
  gpu::Clock sane{0, 0, 1};
  builder.add(run, 4242, sane);
  kernel.end_ns = std::numeric_limits<int64_t>::max();  // past 2100
  builder.add(run, 4242, kernel);
  EXPECT_TRUE(run.spans.empty());
  EXPECT_EQ(run.metadata.at("gpu_bad_timestamps"), "2");
}

TEST_F(GpuSourceTest, SkipsWhatIsNotARegularFile) {
  GpuSource source(on_settings());
  std::string fifo = source.dir() + "/99.gpu";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", source.dir() + "/98.gpu");
  stepscope::Run run;
  source.finish(run, {}, 0);  // returns: neither blocks nor reads forever
  EXPECT_TRUE(run.spans.empty());
}

}  // namespace
