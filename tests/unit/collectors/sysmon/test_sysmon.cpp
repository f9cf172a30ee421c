// sysmon's counter math on recorded /proc text: CPU deltas per core, disk
// utilization as iostat computes it, process CPU percent, D-state counting,
// and parsers fed truncated or hostile text.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "collectors/process/proc_files.hpp"
#include "collectors/process/proc_threads.hpp"
#include "collectors/process/tree.hpp"
#include "collectors/sysmon/nvml.hpp"
#include "collectors/sysmon/process.hpp"
#include "collectors/sysmon/source.hpp"
#include "collectors/sysmon/sysmon.hpp"
#include "collectors/sysmon/system.hpp"
#include "renderers/monitor/csv.hpp"
#include "renderers/monitor/jsonl.hpp"
#include "renderers/monitor/table.hpp"

namespace stepscope {
namespace {

// /proc/stat of a two-core machine, one second apart (USER_HZ 100).
const char* kStatBefore =
    "cpu  1000 100 500 8000 200 10 20 0 0 0\n"
    "cpu0 500 50 250 4000 100 5 10 0 0 0\n"
    "cpu1 500 50 250 4000 100 5 10 0 0 0\n"
    "intr 12345 0 0\nctxt 999\nbtime 1700000000\n";
const char* kStatAfter =
    "cpu  1100 100 530 8060 210 10 20 0 0 0\n"
    "cpu0 600 50 250 4000 100 5 10 0 0 0\n"   // core 0: 100 ticks all user
    "cpu1 500 50 280 4060 110 5 10 0 0 0\n"   // core 1: 30 sys, 60 idle, 10 iowait
    "intr 12400 0 0\nctxt 1200\nbtime 1700000000\n";

TEST(SysmonCpu, PerCoreDeltas) {
  auto before = parse_cpu_stat(kStatBefore);
  auto after = parse_cpu_stat(kStatAfter);
  ASSERT_TRUE(before && after);
  ASSERT_EQ(after->cores.size(), 2u);
  EXPECT_EQ(after->core_ids[1], 1);

  CpuPercent core0 = cpu_percent(before->cores[0], after->cores[0]);
  EXPECT_DOUBLE_EQ(core0.busy, 100);
  EXPECT_DOUBLE_EQ(core0.user, 100);
  EXPECT_DOUBLE_EQ(core0.iowait, 0);

  CpuPercent core1 = cpu_percent(before->cores[1], after->cores[1]);
  EXPECT_DOUBLE_EQ(core1.system, 30);
  EXPECT_DOUBLE_EQ(core1.iowait, 10);
  EXPECT_DOUBLE_EQ(core1.busy, 30);  // iowait is idle time, not busy

  CpuPercent total = cpu_percent(before->total, after->total);
  EXPECT_DOUBLE_EQ(total.busy, 65);  // (100 + 30) of 200 ticks
  EXPECT_DOUBLE_EQ(total.user, 50);
}

TEST(SysmonCpu, NoTicksOrCountersGoingBackwardsGiveZero) {
  auto stat = parse_cpu_stat(kStatAfter);
  ASSERT_TRUE(stat);
  CpuPercent same = cpu_percent(stat->total, stat->total);
  EXPECT_EQ(same.busy, 0);
  CpuPercent backwards = cpu_percent(stat->total, parse_cpu_stat(kStatBefore)->total);
  EXPECT_EQ(backwards.busy, 0);
  EXPECT_GE(backwards.user, 0);
}

TEST(SysmonCpu, OfflineCoresAndOldKernels) {
  // cpu1 offline; a 2.6-era line with only four fields.
  auto stat = parse_cpu_stat("cpu 10 0 5 100\ncpu0 10 0 5 100\ncpu2 1 2 3 4 5 6 7 8\n");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->total.total(), 115u);
  ASSERT_EQ(stat->core_ids.size(), 2u);
  EXPECT_EQ(stat->core_ids[1], 2);
}

TEST(SysmonCpu, HostileTextIsRejectedNotGuessed) {
  EXPECT_FALSE(parse_cpu_stat(""));
  EXPECT_FALSE(parse_cpu_stat("cpu 1 2"));                 // truncated
  EXPECT_FALSE(parse_cpu_stat("cpu 1 2 x 4 5\n"));         // garbage
  EXPECT_FALSE(parse_cpu_stat("cpu0 1 2 3 4\n"));          // no total line
  auto partial = parse_cpu_stat("cpu 1 2 3 4\ncpuX 1 2 3 4\ncpu1 9 9\n");
  ASSERT_TRUE(partial);
  EXPECT_TRUE(partial->cores.empty());  // the bad core lines are skipped
}

// /proc/diskstats one second apart: vda busy 250 ms, wrote 2048 sectors.
const char* kDisksBefore =
    " 253       0 vda 1000 10 80000 500 2000 20 160000 900 0 4000 1400 0 0 0 0\n"
    " 253       1 vda1 900 10 70000 450 1900 20 150000 850 0 3900 1300\n"
    "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
const char* kDisksAfter =
    " 253       0 vda 1010 10 80016 505 2100 20 162048 990 1 4250 1500 0 0 0 0\n"
    " 253       1 vda1 910 10 70016 455 2000 20 152048 940 0 4150 1400\n"
    "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

TEST(SysmonDisk, UtilizationAndThroughputLikeIostat) {
  auto before = parse_diskstats(kDisksBefore);
  auto after = parse_diskstats(kDisksAfter);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].name, "vda");
  DiskRates vda = disk_rates(before[0], after[0], 1.0);
  EXPECT_DOUBLE_EQ(vda.util_percent, 25);  // 250 ms of io_ticks in 1 s
  EXPECT_DOUBLE_EQ(vda.write_bytes_per_s, 2048.0 * 512);
  EXPECT_DOUBLE_EQ(vda.read_bytes_per_s, 16.0 * 512);
  DiskRates half = disk_rates(before[0], after[0], 0.5);
  EXPECT_DOUBLE_EQ(half.util_percent, 50);
  DiskRates short_interval = disk_rates(before[0], after[0], 0.1);
  EXPECT_DOUBLE_EQ(short_interval.util_percent, 100);  // capped, as iostat does
}

TEST(SysmonDisk, TruncatedLinesAreSkipped) {
  auto disks = parse_diskstats(" 8 0 sda 1 2 3\n 8 16 sdb 1 2 3 4 5 6 7 8 9 10 11\n8 32 sdc 1 2 3 4 5 6 7 8 9 x 11\n");
  ASSERT_EQ(disks.size(), 1u);
  EXPECT_EQ(disks[0].name, "sdb");
  EXPECT_EQ(disks[0].io_ticks_ms, 10u);
}

TEST(SysmonMemory, UsedIsTotalMinusAvailable) {
  auto m = parse_meminfo("MemTotal:       16000 kB\nMemFree:         1000 kB\n"
                         "MemAvailable:    6000 kB\nBuffers:          100 kB\nCached:          4000 kB\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->used_bytes, 10000u * 1024);
  EXPECT_EQ(m->cached_bytes, 4000u * 1024);
  EXPECT_FALSE(parse_meminfo("MemTotal: 16000 kB\n"));  // pre-3.14 kernels lack MemAvailable
  EXPECT_FALSE(parse_meminfo("MemTotal: lots\nMemAvailable: 5 kB\n"));
}

TEST(SysmonLoadAndNet, Parse) {
  auto load = parse_loadavg("0.52 1.25 2.00 3/456 7890\n");
  ASSERT_TRUE(load);
  EXPECT_DOUBLE_EQ(load->five, 1.25);
  EXPECT_FALSE(parse_loadavg("0.52 abc"));

  auto nets = parse_net_dev(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets\n"
      "    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0\n"
      "  eth0:1000 5 0 0 0 0 0 0 2000 6 0 0 0 0 0 0\n"
      "  bad0: 1 2 3\n");
  ASSERT_EQ(nets.size(), 2u);
  EXPECT_EQ(nets[1].name, "eth0");
  EXPECT_EQ(nets[1].rx_bytes, 1000u);  // no space after the colon
  EXPECT_EQ(nets[1].tx_bytes, 2000u);
  NetRates r = net_rates(nets[0], {"lo", 3193 + 500, 3193 + 100}, 0.5);
  EXPECT_DOUBLE_EQ(r.rx_bytes_per_s, 1000);
  EXPECT_DOUBLE_EQ(r.tx_bytes_per_s, 200);
}

// A stat line of a process with a hostile name: utime 250, stime 50.
const char* kProcessStat =
    "4242 (a) b) (c) R 4200 4242 4200 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 "
    "987654 10000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(SysmonProcess, CpuPercentFromTicks) {
  auto stat = parse_proc_stat(kProcessStat);
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->cpu_ticks, 300u);
  // Two threads busy for a whole second: 200 ticks at 100 Hz, 200%.
  EXPECT_DOUBLE_EQ(process_cpu_percent(300, 500, 1.0, 100), 200);
  EXPECT_DOUBLE_EQ(process_cpu_percent(300, 350, 0.5, 100), 100);
  EXPECT_EQ(process_cpu_percent(500, 300, 1.0, 100), 0);  // a reused pid: no negative rate
  EXPECT_EQ(process_cpu_percent(300, 500, 0, 100), 0);
  EXPECT_FALSE(parse_proc_stat("4242 (x) R 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("no parenthesis 1 2 3 4 5 6 7 8 9 10 11 12 13 14"));
}

TEST(SysmonProcess, StatusAndIo) {
  auto status = parse_process_status(
      "Name:\tdata\\x1b[2Jworker\nState:\tS (sleeping)\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"
      "Threads:\t7\nvoluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t12\n");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rss_bytes, 102400u * 1024);
  EXPECT_EQ(status->peak_rss_bytes, 204800u * 1024);
  EXPECT_EQ(status->threads, 7u);
  EXPECT_EQ(status->voluntary_switches, 150u);
  EXPECT_EQ(status->involuntary_switches, 12u);
  EXPECT_FALSE(parse_process_status("Name:\tx\nVmRSS:\t5 kB\n"));  // truncated before Threads

  auto kernel_thread = parse_process_status("Name:\tkworker/0:1\nThreads:\t1\n");
  ASSERT_TRUE(kernel_thread);
  EXPECT_EQ(kernel_thread->rss_bytes, 0u);

  auto io = parse_process_io("rchar: 6976\nwchar: 0\nread_bytes: 4096\nwrite_bytes: 1048576\n");
  ASSERT_TRUE(io);
  EXPECT_EQ(io->write_bytes, 1048576u);
  EXPECT_FALSE(parse_process_io("rchar: 6976\nread_bytes: 40"));
}

std::string thread_status(const char* state, int voluntary, int involuntary) {
  return std::string("Name:\tworker\nState:\t") + state + "\nTgid:\t1\nvoluntary_ctxt_switches:\t" +
         std::to_string(voluntary) + "\nnonvoluntary_ctxt_switches:\t" + std::to_string(involuntary) + "\n";
}

TEST(SysmonProcess, ThreadsInDiskWaitAndSwitchesAreSummedOverThreads) {
  ThreadTotals totals;
  EXPECT_TRUE(add_thread_status(thread_status("R (running)", 10, 1), totals));
  EXPECT_TRUE(add_thread_status(thread_status("D (disk sleep)", 20, 2), totals));
  EXPECT_TRUE(add_thread_status(thread_status("S (sleeping)", 30, 3), totals));
  EXPECT_TRUE(add_thread_status(thread_status("D (disk sleep)", 40, 4), totals));
  EXPECT_FALSE(add_thread_status("Name:\tworker\nState:\tD (disk sleep)\nvoluntary_ctxt", totals));
  EXPECT_EQ(totals.disk_wait, 2u);
  EXPECT_EQ(totals.voluntary_switches, 100u);
  EXPECT_EQ(totals.involuntary_switches, 10u);
}

TEST(SysmonLive, FirstSamplePrimesThenThisProcessIsMeasured) {
  SysmonOptions options;
  options.gpus = false;
  Sysmon sysmon(options);
  SysmonSample first = sysmon.sample(0, {getpid()});
  EXPECT_FALSE(first.has_rates);
  ASSERT_EQ(first.processes.size(), 1u);
  EXPECT_FALSE(first.processes[0].has_rates);
  EXPECT_GT(first.processes[0].rss_bytes, 0u);
  SysmonSample second = sysmon.sample(200'000'000, {getpid(), -7});
  EXPECT_TRUE(second.has_rates);
  EXPECT_DOUBLE_EQ(second.interval_s, 0.2);
  ASSERT_EQ(second.processes.size(), 1u);  // the impossible pid is skipped
  EXPECT_TRUE(second.processes[0].has_rates);
  EXPECT_GE(second.processes[0].cpu_percent, 0);
  EXPECT_TRUE(second.gpus.empty());
}

// `record` polls at 10 Hz but reads the load, disks and networks once a
// second: the polls between carry none of them, and the next slow poll's
// rates span the whole second.
TEST(SysmonLive, SlowCountersAreReadOncePerSlowInterval) {
  // lo's received bytes, read around the polls that read /proc/net/dev.
  auto lo_rx = [] {
    for (const NetCounters& net : parse_net_dev(read_proc_file("/proc/net/dev").value_or(""))) {
      if (net.name == "lo") return net.rx_bytes;
    }
    return uint64_t{0};
  };
  SysmonOptions options;
  options.gpus = false;
  options.slow_interval_ns = 1'000'000'000;
  Sysmon sysmon(options);
  const std::vector<pid_t> pids{getpid()};
  const uint64_t before_first = lo_rx();
  SysmonSample first = sysmon.sample(0, pids);
  const uint64_t after_first = lo_rx();
  EXPECT_TRUE(first.system.load) << "the first poll reads everything";
  for (int64_t poll = 1; poll < 10; ++poll) {
    SysmonSample fast = sysmon.sample(poll * 100'000'000, pids);
    EXPECT_TRUE(fast.has_rates);
    EXPECT_FALSE(fast.system.load);
    EXPECT_TRUE(fast.system.disks.empty());
    EXPECT_TRUE(fast.system.networks.empty());
    EXPECT_TRUE(fast.system.memory);
    ASSERT_EQ(fast.processes.size(), 1u);
    EXPECT_GT(fast.processes[0].rss_bytes, 0u);
  }
  ::usleep(20'000);
  const uint64_t before_slow = lo_rx();
  SysmonSample slow = sysmon.sample(1'000'000'000, pids);
  const uint64_t after_slow = lo_rx();
  EXPECT_TRUE(slow.system.load);
  const NetRates* lo = nullptr;
  for (const NetRates& net : slow.system.networks) {
    if (net.name == "lo") lo = &net;
  }
  ASSERT_NE(lo, nullptr);
  // The bytes between the first poll and this one, over the 1 s between them.
  EXPECT_GE(lo->rx_bytes_per_s, static_cast<double>(before_slow - after_first));
  EXPECT_LE(lo->rx_bytes_per_s, static_cast<double>(after_slow - before_first));
}

// The thread totals of a live process through kept files, against the sum
// of its threads' status files read independently. The threads first sleep
// in short steps (their switch counts move) and then for long: a reader that
// kept a count it should have read again would fall behind the truth.
TEST(SysmonLive, ThreadTotalsFollowTheThreadsStatus) {
  const char* program =
      "import threading, time\n"
      "def work():\n"
      "    for _ in range(20): time.sleep(0.01)\n"
      "    time.sleep(30)\n"
      "for _ in range(6): threading.Thread(target=work, daemon=True).start()\n"
      "time.sleep(30)\n";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/usr/bin/python3", "python3", "-c", program, nullptr);
    ::_exit(127);
  }
  ProcessCounterReader reader;
  uint64_t unreadable = 0;
  std::optional<ProcessCounters> during;
  for (int i = 0; i < 100 && (!during || during->status.threads < 7); ++i) {
    ::usleep(10'000);
    during = reader.read(pid, unreadable);
  }
  ASSERT_TRUE(during);
  EXPECT_EQ(during->status.threads, 7u);
  ::usleep(600'000);  // the short sleeps are over
  auto after = reader.read(pid, unreadable);
  auto again = reader.read(pid, unreadable);
  ThreadTotals truth;
  for (pid_t tid : thread_ids(pid)) {
    auto status = read_proc_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
    ASSERT_TRUE(status && add_thread_status(*status, truth));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(after && again);
  EXPECT_GE(truth.voluntary_switches, during->thread_totals.voluntary_switches + 6 * 5)
      << "the threads went on sleeping after the first reading";
  EXPECT_EQ(after->thread_totals.voluntary_switches, truth.voluntary_switches);
  EXPECT_EQ(again->thread_totals.voluntary_switches, truth.voluntary_switches);
  EXPECT_EQ(after->thread_totals.involuntary_switches, truth.involuntary_switches);
  EXPECT_EQ(after->thread_totals.disk_wait, 0u);
  EXPECT_EQ(unreadable, 0u);
  EXPECT_FALSE(reader.read(pid, unreadable)) << "reaped";
}

// Past the budget of threads kept open, the rest are read and closed each
// time: the descriptors stay bounded, the totals are the same.
TEST(SysmonLive, ThreadsPastTheBudgetAreReadWithoutKeepingFiles) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::thread> sleepers;
  const size_t extra = ProcessCounterReader::kMaxKeptThreads + 20;
  for (size_t i = 0; i < extra; ++i) sleepers.emplace_back([released] { released.wait(); });
  auto open_descriptors = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  const size_t before = open_descriptors();
  ProcessCounterReader reader;
  uint64_t unreadable = 0;
  std::optional<ProcessCounters> first, second;
  for (int poll = 0; poll < 2; ++poll) {
    (poll == 0 ? first : second) = reader.read(::getpid(), unreadable);
    reader.keep_only({::getpid()});
  }
  const size_t during = open_descriptors();
  release.set_value();
  for (std::thread& t : sleepers) t.join();
  ASSERT_TRUE(first && second);
  EXPECT_GE(second->status.threads, extra + 1);
  // Kept: 2 per thread up to the budget, 3 files and the task folder of the process.
  EXPECT_LE(during, before + 2 * ProcessCounterReader::kMaxKeptThreads + 4 + 1);
  EXPECT_GE(second->thread_totals.voluntary_switches, first->thread_totals.voluntary_switches);
}

TEST(Nvml, AbsentLibraryIsAReasonNotAnError) {
  Nvml nvml("libstepscope-no-such-nvml.so.1");
  EXPECT_FALSE(nvml.available());
  EXPECT_NE(nvml.reason().find("libstepscope-no-such-nvml.so.1"), std::string::npos);
  EXPECT_FALSE(nvml.read({}));
}

// The stand-in's count of calls of `query` (tests/unit/nvml_stand_in).
class NvmlStandIn : public testing::Test {
 protected:
  void SetUp() override {
    library_ = ::dlopen(STEPSCOPE_NVML_STAND_IN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << ::dlerror();
    calls_ = reinterpret_cast<int (*)(const char*)>(::dlsym(library_, "stand_in_calls"));
    reset_ = reinterpret_cast<void (*)()>(::dlsym(library_, "stand_in_reset"));
    ASSERT_TRUE(calls_ && reset_);
  }
  void TearDown() override {
    if (library_) ::dlclose(library_);
  }
  int calls(const char* query) const { return calls_(query); }
  void reset() const { reset_(); }

 private:
  void* library_ = nullptr;
  int (*calls_)(const char*) = nullptr;
  void (*reset_)() = nullptr;
};

TEST_F(NvmlStandIn, AFullReadHasEveryMetricOfEveryGpu) {
  Nvml nvml(STEPSCOPE_NVML_STAND_IN);
  ASSERT_TRUE(nvml.available()) << nvml.reason();
  auto gpus = nvml.read({.slow = true, .pcie = true});
  ASSERT_TRUE(gpus);
  ASSERT_EQ(gpus->size(), 2u);
  const GpuReading& g = (*gpus)[0];
  EXPECT_EQ(g.name, "Stand-in GPU \"zero\"");
  EXPECT_EQ((*gpus)[1].name, "Stand-in GPU one");
  EXPECT_EQ(g.uuid, "GPU-0000aaaa-stand-in");
  EXPECT_EQ((*gpus)[1].uuid, "GPU-1111bbbb-stand-in");
  EXPECT_EQ(g.util_percent, 40);
  EXPECT_EQ((*gpus)[1].util_percent, 41);
  EXPECT_EQ(g.memory_util_percent, 10);
  EXPECT_EQ(g.memory_used_bytes, 20ULL << 30);
  EXPECT_EQ(g.memory_total_bytes, 80ULL << 30);
  EXPECT_EQ(g.sm_clock_mhz, 1980);
  EXPECT_EQ(g.power_watts, 350);
  EXPECT_EQ(g.temperature_c, 45);
  EXPECT_EQ(g.pcie_rx_bytes_per_s, 1024.0 * 1024);
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 4242);
  EXPECT_EQ(g.processes[0].memory_bytes, 5ULL << 30);
  EXPECT_EQ(g.processes[0].sm_util_percent, 70);
  EXPECT_TRUE((*gpus)[1].processes.empty());
}

// `record` polls at 10 Hz on the sampler's thread: between slow readings
// only utilization and memory go to the driver, and a GPU's name never
// does after start-up.
TEST_F(NvmlStandIn, AFastReadQueriesOnlyUtilizationAndMemory) {
  Nvml nvml(STEPSCOPE_NVML_STAND_IN);
  ASSERT_TRUE(nvml.available()) << nvml.reason();
  reset();
  auto gpus = nvml.read({.slow = false, .pcie = true, .process_utilization = true});
  ASSERT_TRUE(gpus);
  ASSERT_EQ(gpus->size(), 2u);
  for (const char* query : {"utilization", "memory"}) EXPECT_EQ(calls(query), 2) << query;
  for (const char* query : {"name", "uuid", "clock", "power", "temperature", "pcie", "processes", "process_utilization"}) {
    EXPECT_EQ(calls(query), 0) << query;
  }
  const GpuReading& g = (*gpus)[0];
  EXPECT_EQ(g.name, "Stand-in GPU \"zero\"");
  EXPECT_EQ(g.util_percent, 40);
  EXPECT_EQ(g.memory_used_bytes, 20ULL << 30);
  EXPECT_FALSE(g.sm_clock_mhz || g.power_watts || g.temperature_c || g.pcie_rx_bytes_per_s);
  EXPECT_TRUE(g.processes.empty());
}

// Sysmon as `record` sets it up: the slow queries once per slow interval.
TEST_F(NvmlStandIn, RecordingReadsTheSlowQueriesOncePerSlowInterval) {
  SysmonOptions options = SysmonSource::recording_options();
  options.nvml_library = STEPSCOPE_NVML_STAND_IN;
  Sysmon sysmon(options);
  reset();
  const std::vector<pid_t> pids{::getpid()};
  std::vector<SysmonSample> samples;
  for (int64_t t = 0; t < 20; ++t) samples.push_back(sysmon.sample(1'000'000'000 + t * 100'000'000, pids));
  EXPECT_EQ(calls("utilization"), 2 * 20);
  EXPECT_EQ(calls("power"), 2 * 2) << "at 0 s and 1 s";
  EXPECT_EQ(calls("processes"), 2 * 2);
  EXPECT_EQ(calls("pcie"), 0) << "off in record";
  EXPECT_EQ(calls("process_utilization"), 0) << "off in record";
  for (size_t i = 0; i < samples.size(); ++i) {
    ASSERT_EQ(samples[i].gpus.size(), 2u);
    EXPECT_EQ(samples[i].gpus[0].power_watts.has_value(), i % 10 == 0) << i;
    EXPECT_TRUE(samples[i].gpus[0].memory_used_bytes) << i;
  }
}

// What record keeps of each GPU's identity: the labels DCGM's exporter joins on.
TEST_F(NvmlStandIn, RecordKeepsEachGpusNameAndUuid) {
  SysmonOptions options = SysmonSource::recording_options();
  options.nvml_library = STEPSCOPE_NVML_STAND_IN;
  SysmonSource source(options);
  stepscope::Run run;
  source.poll(run, {::getpid()}, 1'000'000'000);  // primes the rates
  source.poll(run, {::getpid()}, 1'100'000'000);
  EXPECT_EQ(run.metadata["sysmon_gpu.0.uuid"], "GPU-0000aaaa-stand-in");
  EXPECT_EQ(run.metadata["sysmon_gpu.1.uuid"], "GPU-1111bbbb-stand-in");
  EXPECT_EQ(run.metadata["sysmon_gpu.0.name"], "Stand-in GPU \"zero\"");
}

SysmonSample fixture_sample() {
  SysmonSample s;
  s.unix_ns = 1'700'000'000'500'000'000;
  s.interval_s = 1;
  s.has_rates = true;
  s.system.cpu = {65, 50, 15, 5};
  s.system.cores = {{0, {100, 100, 0, 0}}, {1, {30, 0, 30, 10}}};
  s.system.memory = MemoryInfo{16 << 20, 6 << 20, 4 << 20, 10 << 20};
  s.system.disks = {{"vda", 8192, 1048576, 25}};
  ProcessSample p;
  p.pid = 42;
  p.name = "evil\x1b[2J\"name";
  p.cpu_percent = 150;
  p.has_rates = true;
  p.io = ProcessIo{0, 4096};
  s.processes.push_back(p);
  GpuReading g;
  g.name = "Fake GPU";
  g.util_percent = 97;
  g.memory_used_bytes = 1 << 30;
  s.gpus.push_back(g);
  return s;
}

TEST(MonitorRenderers, JsonlIsOneEscapedObjectWithNullsForUnsupported) {
  std::string line = monitor_jsonl_line(fixture_sample());
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_NE(line.find("\"ts\":1700000000.5"), std::string::npos) << line;
  EXPECT_NE(line.find("\"cpu_percent\":150"), std::string::npos);
  EXPECT_NE(line.find("\"write_bytes\":4096"), std::string::npos);
  EXPECT_NE(line.find("\"power_watts\":null"), std::string::npos);
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_NE(line.find("evil\\\\x1B[2J\\\"name"), std::string::npos) << line;
}

TEST(MonitorRenderers, JsonlShowsTheMemoryCgroup) {
  SysmonSample s = fixture_sample();
  std::string none = monitor_jsonl_line(s);
  EXPECT_NE(none.find("\"cgroup_memory_limit_bytes\":null,\"cgroup_memory_usage_bytes\":null"), std::string::npos) << none;
  s.system.cgroup_memory = CgroupMemory{1, 536870912, 400000000, 300000000};
  std::string limited = monitor_jsonl_line(s);
  EXPECT_NE(limited.find("\"cgroup_memory_limit_bytes\":536870912,\"cgroup_memory_usage_bytes\":400000000,"
                         "\"cgroup_memory_working_set_bytes\":300000000"),
            std::string::npos)
      << limited;
}

TEST(MonitorRenderers, TableShowsALimitedMemoryCgroupOnly) {
  SysmonSample s = fixture_sample();
  s.system.cgroup_memory = CgroupMemory{2, std::nullopt, 400 << 20, 300 << 20};
  EXPECT_EQ(monitor_table(s, {false, false, ""}).find("Cgroup"), std::string::npos);
  s.system.cgroup_memory->limit_bytes = 512 << 20;
  std::string table = monitor_table(s, {false, false, ""});
  EXPECT_NE(table.find("Cgroup memory  working set 300"), std::string::npos) << table;
  EXPECT_NE(table.find("limit 512"), std::string::npos) << table;
}

TEST(MonitorRenderers, CsvColumnsAreFixedByTheFirstSample) {
  MonitorCsv csv(true);
  SysmonSample s = fixture_sample();
  std::string first = csv.rows(s);
  s.system.disks.clear();  // a device disappears
  s.system.networks.push_back({"new0", 1, 1});  // one appears: ignored
  std::string second = csv.rows(s);
  auto count = [](const std::string& text, char c) { return std::count(text.begin(), text.end(), c); };
  std::string header = first.substr(0, first.find('\n'));
  std::string row = first.substr(header.size() + 1);
  EXPECT_EQ(header.rfind("timestamp,cpu_percent,", 0), 0u) << header;
  EXPECT_NE(header.find("disk_vda_util_percent"), std::string::npos);
  EXPECT_NE(header.find("gpu0_util_percent"), std::string::npos);
  EXPECT_EQ(count(row, ','), count(header, ','));
  EXPECT_EQ(count(second, '\n'), 1);
  EXPECT_EQ(count(second, ','), count(header, ','));
  EXPECT_EQ(second.find("new0"), std::string::npos);
}

TEST(MonitorRenderers, TableEscapesNamesAndClearsOnlyInPlace) {
  SysmonSample s = fixture_sample();
  std::string appended = monitor_table(s, {false, false, ""});
  EXPECT_EQ(appended.find('\x1b'), std::string::npos);
  EXPECT_NE(appended.find("evil\\x1B[2J\"name"), std::string::npos) << appended;
  EXPECT_NE(appended.find("Fake GPU"), std::string::npos);
  std::string in_place = monitor_table(s, {true, true, ""});
  EXPECT_EQ(in_place.rfind("\x1b[H\x1b[2J", 0), 0u);
  EXPECT_EQ(human_bytes(1536), "1.5K");
  EXPECT_EQ(human_bytes(10), "10B");
}

}  // namespace
}  // namespace stepscope
