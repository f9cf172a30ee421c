// CUPTI's own record structs (from the installed headers) through the
// encoder, the portable file format and the Run builder: what a GPU run would
// produce, checked without a GPU. Built only when CUPTI headers were found.
#include <cupti.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/gpu/file_decoder.hpp"
#include "collectors/gpu/run_builder.hpp"
#include "cupti/cupti_encode.hpp"

namespace {

using namespace stepscope;

constexpr int64_t kPid = 777;

const char* fake_names(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    return "cudaLaunchKernel_v7000";
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2) {
    return "cuMemcpyHtoDAsync_v2";
  }
  return nullptr;
}

// CUPTI hands out records in one buffer, each its struct; so does this.
class RecordBuffer {
 public:
  template <typename T>
  void add(const T& record) {
    size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &record, sizeof(T));
    offsets_.push_back(at);
  }
  std::string encode(cupti::Encoder& encoder) {
    std::string out;
    gpu::append_file_header(out, kPid);
    gpu::append_clock(out, gpu::Clock{0, 0, 1});
    for (size_t at : offsets_) encoder.encode(reinterpret_cast<const CUpti_Activity*>(bytes_.data() + at), out);
    return out;
  }

 private:
  alignas(8) std::vector<uint8_t> bytes_;
  std::vector<size_t> offsets_;
};

CUpti_ActivityAPI api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint32_t correlation, uint64_t start) {
  CUpti_ActivityAPI a{};
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = start + 2000;
  a.processId = kPid;
  a.threadId = 781;
  a.correlationId = correlation;
  return a;
}

stepscope::Run run_of(const std::string& file) {
  stepscope::Run run;
  gpu::FileDecoder decoder("t.gpu");
  std::vector<gpu::Record> records;
  decoder.feed(file, records);
  EXPECT_EQ(decoder.error(), "");
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  gpu::RunBuilder builder;
  for (const auto& r : records) builder.add(run, decoder.pid(), r);
  builder.finish(run);
  return run;
}

std::map<SpanKind, std::vector<const Span*>> by_kind(const stepscope::Run& run) {
  std::map<SpanKind, std::vector<const Span*>> out;
  for (const Span& s : run.spans) out[s.kind].push_back(&s);
  return out;
}

TEST(CuptiEncode, StripsApiVersionSuffixes) {
  EXPECT_EQ(cupti::strip_version_suffix("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(cupti::strip_version_suffix("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync");
  EXPECT_EQ(cupti::strip_version_suffix("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(cupti::strip_version_suffix("foo_v"), "foo_v");
  EXPECT_EQ(cupti::strip_version_suffix("foo_vx1"), "foo_vx1");
}

TEST(CuptiEncode, RealRecordsBecomeImporterShapedSpans) {
  RecordBuffer buffer;
  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 1;
  context.deviceId = 0;
  buffer.add(context);

  buffer.add(api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 40, 1'000'000));
  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.start = 1'005'000;
  kernel.end = 1'015'000;
  kernel.deviceId = 0;
  kernel.contextId = 1;
  kernel.streamId = 7;
  kernel.correlationId = 40;
  kernel.name = "_Z6vecAddPfS_S_i";
  buffer.add(kernel);
  kernel.start += 20'000;  // the same kernel again: its name is written once
  kernel.end += 20'000;
  kernel.correlationId = 0;
  buffer.add(kernel);

  buffer.add(api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, 41, 2'000'000));
  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 1 << 20;
  copy.start = 2'001'000;
  copy.end = 2'101'000;
  copy.contextId = 1;
  copy.streamId = 13;
  copy.correlationId = 41;
  buffer.add(copy);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.correlationId = 0;
  buffer.add(copy);

  CUpti_ActivityMemset4 set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.bytes = 256;
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  set.start = 3'000'000;
  set.end = 3'000'500;
  set.contextId = 1;
  set.streamId = 7;
  buffer.add(set);

  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  sync.start = 3'100'000;
  sync.end = 3'200'000;
  sync.contextId = 1;
  sync.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  buffer.add(sync);

  CUpti_ActivityOverhead3 overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  overhead.objectId.pt.processId = kPid;
  overhead.objectId.pt.threadId = 790;
  overhead.start = 4'000'000;
  overhead.end = 4'000'100;
  buffer.add(overhead);
  overhead.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;  // no host thread: not kept
  buffer.add(overhead);

  CUpti_ActivityMarker2 marker{};
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  marker.timestamp = 900'000;
  marker.id = 5;
  marker.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  marker.objectId.pt.threadId = 781;
  marker.name = "train_step";
  buffer.add(marker);
  marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  marker.timestamp = 3'300'000;
  marker.name = nullptr;
  buffer.add(marker);

  CUpti_ActivityDevice5 ignored{};
  ignored.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  buffer.add(ignored);

  cupti::Encoder encoder(fake_names);
  std::string file = buffer.encode(encoder);
  stepscope::Run run = run_of(file);
  auto spans = by_kind(run);

  ASSERT_EQ(spans[SpanKind::kRuntimeCall].size(), 2u);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kRuntimeCall][0]->name), "cudaLaunchKernel");
  EXPECT_EQ(run.strings.get(spans[SpanKind::kRuntimeCall][1]->name), "cuMemcpyHtoDAsync");
  EXPECT_EQ(spans[SpanKind::kRuntimeCall][0]->tid, 781);
  EXPECT_EQ(spans[SpanKind::kRuntimeCall][0]->end_ns - spans[SpanKind::kRuntimeCall][0]->start_ns, 2000);

  ASSERT_EQ(spans[SpanKind::kKernel].size(), 2u);
  const Span& k = *spans[SpanKind::kKernel][0];
  EXPECT_EQ(run.strings.get(k.name), "vecAdd(float*, float*, float*, int)");  // CUPTI: _Z6vecAddPfS_S_i
  EXPECT_EQ(k.pid, 0);
  EXPECT_EQ(k.tid, 7);
  EXPECT_EQ(k.start_ns, 1'005'000);
  EXPECT_EQ(k.end_ns, 1'015'000);
  EXPECT_EQ(k.correlation, (kPid << 32) | 40);
  EXPECT_EQ(spans[SpanKind::kKernel][1]->name, k.name);

  ASSERT_EQ(spans[SpanKind::kMemcpy].size(), 2u);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kMemcpy][0]->name), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(run.strings.get(spans[SpanKind::kMemcpy][0]->detail), "HtoD Pinned");
  EXPECT_EQ(spans[SpanKind::kMemcpy][0]->bytes, 1 << 20);
  EXPECT_EQ(spans[SpanKind::kMemcpy][0]->tid, 13);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kMemcpy][1]->name), "Memcpy DtoH (Device -> Pageable)");
  EXPECT_EQ(run.strings.get(spans[SpanKind::kMemcpy][1]->detail), "DtoH Pageable");

  ASSERT_EQ(spans[SpanKind::kMemset].size(), 1u);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kMemset][0]->name), "Memset (Device)");
  EXPECT_EQ(spans[SpanKind::kMemset][0]->bytes, 256);

  ASSERT_EQ(spans[SpanKind::kSync].size(), 1u);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kSync][0]->name), "Context Sync");
  EXPECT_EQ(spans[SpanKind::kSync][0]->pid, 0);
  EXPECT_EQ(spans[SpanKind::kSync][0]->tid, gpu::kNoStream);

  ASSERT_EQ(spans[SpanKind::kOther].size(), 1u);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kOther][0]->name), "CUPTI overhead: buffer flush");
  EXPECT_EQ(spans[SpanKind::kOther][0]->tid, 790);

  ASSERT_EQ(spans[SpanKind::kUserRange].size(), 1u);
  EXPECT_EQ(run.strings.get(spans[SpanKind::kUserRange][0]->name), "train_step");
  EXPECT_EQ(spans[SpanKind::kUserRange][0]->start_ns, 900'000);
  EXPECT_EQ(spans[SpanKind::kUserRange][0]->end_ns, 3'300'000);

  // The launch -> kernel and the copy call -> copy: two ac2g flows.
  ASSERT_EQ(run.flows.size(), 2u);
  EXPECT_EQ(run.spans[run.flows[0].to].kind, SpanKind::kKernel);
  EXPECT_EQ(run.spans[run.flows[1].to].kind, SpanKind::kMemcpy);

  // Each distinct name is written once; after reset() a fresh file writes them again.
  size_t once = file.size();
  encoder.reset();
  EXPECT_EQ(buffer.encode(encoder).size(), once);
  EXPECT_LT(buffer.encode(encoder).size(), once);
}

TEST(CuptiEncode, UnnamedApiCallsKeepTheirId) {
  RecordBuffer buffer;
  buffer.add(api(CUPTI_ACTIVITY_KIND_RUNTIME, 9999, 1, 10));
  cupti::Encoder encoder(fake_names);
  stepscope::Run run = run_of(buffer.encode(encoder));
  ASSERT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.strings.get(run.spans[0].name), "cbid 9999");
}

TEST(CuptiEncode, BuilderNamesMatchTheHeadersEnums) {
  EXPECT_STREQ(gpu::memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "DtoD");
  EXPECT_STREQ(gpu::memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "PtoP");
  EXPECT_STREQ(gpu::memory_kind_name(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), "Managed");
  EXPECT_STREQ(gpu::memory_kind_name(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC), "Managed Static");
  EXPECT_STREQ(gpu::sync_type_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT), "Stream Wait Event");
  EXPECT_STREQ(gpu::sync_type_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE), "Stream Sync");
}

}  // namespace
