#include "collectors/recorder.hpp"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "collectors/gpu/source.hpp"
#include "collectors/hooks/channel.hpp"
#include "collectors/process/child_process.hpp"
#include "collectors/process/proc_threads.hpp"
#include "collectors/recording_source.hpp"
#include "collectors/sysmon/source.hpp"
#include "run/run_file.hpp"
#include "run/run_trimmer.hpp"
#include "run/trimmed_run.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr int64_t kSecond = 1'000'000'000;
// New processes must be seen within 100 ms of their start.
constexpr int64_t kTreeScanInterval = 50'000'000;
constexpr int64_t kCommitInterval = kSecond;

void check_options(const RecordOptions& options) {
  if (options.output.empty()) throw InputError("record: an output file (-o RUN.db) is required");
  if (!(options.rate_hz >= 1 && options.rate_hz <= 100000)) {
    throw InputError(fmt::format("record: --rate {} is outside 1..100000 Hz", options.rate_hz));
  }
  if (options.duration_s < 0) throw InputError("record: --duration must not be negative");
  if (options.max_size_bytes > 0 && options.max_size_bytes < kSmallestRunSizeLimit) {
    throw InputError(fmt::format("record: --max-size {} bytes is below the least limit, {}", options.max_size_bytes,
                                 describe_byte_size(kSmallestRunSizeLimit)));
  }
  if ((options.attach_pid > 0) == !options.command.empty()) {
    throw InputError("record: give either --pid PID or -- COMMAND, not both or neither");
  }
}

void describe_run(Run& run, const RecordOptions& options) {
  run.metadata["clock"] = "monotonic";
  run.metadata["recorder"] = fmt::format("stepscope {}", STEPSCOPE_VERSION);
  run.metadata["rate_hz"] = fmt::format("{}", options.rate_hz);
  run.metadata["sample_period_ns"] = std::to_string(static_cast<int64_t>(kSecond / options.rate_hz));
  run.metadata["start_unix_ns"] = std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch()).count());
  // The run's clock at that moment: with it, any time of the run is a Unix time.
  run.metadata["start_clock_ns"] = std::to_string(monotonic_ns());
  if (options.idle) run.metadata["profile_idle"] = "1";
  if (options.native) run.metadata["native_stacks"] = "1";
  describe_job(run, options.job);
  if (!options.command.empty()) {
    std::string joined;
    for (const std::string& arg : options.command) joined += (joined.empty() ? "" : " ") + arg;
    run.metadata["command"] = joined;
  } else {
    run.metadata["attached_pid"] = std::to_string(options.attach_pid);
  }
}

// The sources that run beside the sampler. Each later collector adds itself
// here, so the loop itself never changes for a new one.
std::vector<std::unique_ptr<RecordingSource>> make_sources(const RecordOptions& options) {
  std::vector<std::unique_ptr<RecordingSource>> sources;
  sources.push_back(make_hook_channel(options));
  sources.push_back(std::make_unique<SysmonSource>());
  sources.push_back(make_gpu_source(options));
  return sources;
}

struct ScheduledSource {
  std::unique_ptr<RecordingSource> source;
  int64_t next_poll_ns = 0;
};

class RecordingLoop {
 public:
  RecordingLoop(const RecordOptions& options, Run& run)
      : options_(options), run_(run), sampler_(run),
        period_ns_(static_cast<int64_t>(kSecond / options.rate_hz)), rng_(std::random_device{}()) {
    for (auto& source : make_sources(options)) sources_.push_back({std::move(source), 0});
    // Twice a period at rates above 500 Hz (native_stacks.hpp).
    if (options.native) sampler_.enable_native(std::min<int64_t>(period_ns_ / 2, kNativeCopyPeriodNs));
  }

  // What the launched command's environment needs for every source.
  std::vector<std::string> child_environment() {
    std::vector<std::string> env;
    for (ScheduledSource& s : sources_) {
      for (std::string& setting : s.source->child_environment()) env.push_back(std::move(setting));
    }
    return env;
  }

  RecordSummary run(ChildProcess* child, pid_t root) {
    // The file is created only now, once the target is known to be good, so
    // a failed attach never truncates an earlier recording.
    RunWriter writer(options_.output);
    if (options_.max_size_bytes > 0) writer.limit_size(options_.max_size_bytes);
    start_ns_ = monotonic_ns();
    sample_until_done(child, root, writer);
    int64_t stop = monotonic_ns();
    if (child) summary_.exit_status = child->wait();
    finish(child, root, stop);
    writer.commit(run_);
    writer.trim_to_limit(run_);
    note_trimming();
    if (options_.on_commit) options_.on_commit(run_, summary_.stats, stop, true);
    return summary_;
  }

  Sampler& sampler() { return sampler_; }

 private:
  // Samples until the command exits (launch mode), the tree is gone or a
  // signal arrives (attach mode), or the duration is over; commits every second.
  void sample_until_done(ChildProcess* child, pid_t root, RunWriter& writer) {
    int64_t next_scan = start_ns_, next_commit = start_ns_ + kCommitInterval;
    RoundDeadlines rounds{start_ns_, start_ns_ + jittered_period()};
    int64_t end = options_.duration_s > 0
                      ? start_ns_ + static_cast<int64_t>(options_.duration_s * kSecond)
                      : 0;
    for (;;) {
      int64_t now = monotonic_ns();
      bool stop_asked = relay_.poll(child ? child->pid() : 0).stop;
      if ((!child && stop_asked) || (end && now >= end)) return;
      if (now >= next_scan) {
        sampler_.scan_tree(root, now);
        next_scan = now + kTreeScanInterval;
        if (child ? child->poll().has_value() : !sampler_.any_alive()) return;
      }
      sampler_.sample(now);
      poll_sources(now);
      if (first_round_ns_ == 0) first_round_ns_ = now;
      last_round_ns_ = now;
      if (now >= next_commit) {
        update_summary();
        writer.commit(run_);
        writer.trim_to_limit(run_);
        if (options_.on_commit) options_.on_commit(run_, summary_.stats, now, false);
        writer.release_written(run_);  // memory stays flat: live readers have taken what they need
        next_commit = now + kCommitInterval;
      }
      advance(rounds, monotonic_ns());
      relay_.wait_until(end ? std::min(rounds.next, end) : rounds.next, rounds.after);
    }
  }

  void finish(ChildProcess* child, pid_t root, int64_t stop) {
    sampler_.scan_tree(root, stop);
    if (child) sampler_.set_exit_status(child->pid(), summary_.exit_status);
    std::vector<pid_t> tree = sampler_.live_pids();
    for (ScheduledSource& s : sources_) s.source->finish(run_, tree, stop);
    sampler_.finish(stop);
    update_summary();
    summary_.seconds = static_cast<double>(stop - start_ns_) / kSecond;
    summary_.effective_rate_hz =
        summary_.seconds > 0 ? static_cast<double>(summary_.stats.rounds) / summary_.seconds : 0;
    // The recorded tree's processes; the Run also holds rows for GPU devices.
    summary_.processes = static_cast<size_t>(summary_.stats.processes_seen);
    summary_.notes = sampler_.refusals();
    if (!summary_.stats.native.first_problem.empty()) {
      summary_.notes.push_back("some native stacks are missing (those threads keep their Python stacks): " +
                               summary_.stats.native.first_problem);
    }
    for (ScheduledSource& s : sources_) {
      for (std::string& note : s.source->notes()) summary_.notes.push_back(std::move(note));
    }
  }

  // What --max-size dropped, for the summary: the file alone would not say.
  void note_trimming() {
    if (std::optional<Trimming> trimming = run_trimming(run_)) {
      summary_.notes.push_back("the run file was " + describe_trimming(*trimming));
    }
  }

  // Each sample stands for the mean interval between rounds as it really
  // was: jitter averages out, and a sampler that fell behind does not
  // undercount.
  void update_summary() {
    summary_.stats = sampler_.stats();
    run_.metadata["sampler_stacks_kept"] = std::to_string(summary_.stats.stacks_kept);
    run_.metadata["sampler_torn_stacks"] = std::to_string(summary_.stats.torn_stacks);
    run_.metadata["sampler_torn_stacks_unjoined"] = std::to_string(summary_.stats.torn_stacks_unjoined);
    if (options_.native) describe_native_stacks(summary_.stats.native);
    if (summary_.stats.rounds < 2) return;
    int64_t period = (last_round_ns_ - first_round_ns_) / static_cast<int64_t>(summary_.stats.rounds - 1);
    if (period > 0) run_.metadata["sample_period_ns"] = std::to_string(period);
  }

  // How many samples carry native frames, so that a report can say how
  // much of the profile they cover (docs/native-stacks.md).
  void describe_native_stacks(const NativeStackStats& native) {
    run_.metadata["native_merged"] = std::to_string(native.merged);
    run_.metadata["native_unmerged"] = std::to_string(native.unmerged);
    run_.metadata["native_incomplete"] = std::to_string(native.incomplete);
    run_.metadata["native_refused_threads"] = std::to_string(native.refused_threads);
    run_.metadata["native_symbol_indexes"] = std::to_string(native.symbol_indexes);
  }

  void poll_sources(int64_t now) {
    std::vector<pid_t> tree;
    for (ScheduledSource& s : sources_) {
      if (now < s.next_poll_ns) continue;
      if (tree.empty()) tree = sampler_.live_pids();
      s.source->poll(run_, tree, now);
      s.next_poll_ns = now + s.source->poll_interval_ns();
    }
  }

  // Intervals are drawn uniformly from [0.5, 1.5) periods, so a loop whose
  // own period divides ours is not always caught at the same point.
  int64_t jittered_period() {
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    return static_cast<int64_t>(static_cast<double>(period_ns_) * jitter(rng_));
  }

  // The next round's deadline, and the one after, drawn a round ahead so
  // that its timer can be set early (RoundTimer).
  struct RoundDeadlines {
    int64_t next, after;
  };

  // Moves on by a round once the round at `rounds.next` (or a signal's,
  // earlier) has run.
  void advance(RoundDeadlines& rounds, int64_t now) {
    rounds.next = rounds.after;
    if (rounds.next + period_ns_ < now) {  // a whole period late: skip, don't burst
      ++summary_.late_rounds;
      rounds.next = now;
    }
    rounds.after = rounds.next + jittered_period();
  }

  const RecordOptions& options_;
  Run& run_;
  SignalRelay relay_;  // before the child starts, so it never misses a signal
  Sampler sampler_;
  int64_t period_ns_;
  std::mt19937_64 rng_;
  std::vector<ScheduledSource> sources_;
  RecordSummary summary_;
  int64_t start_ns_ = 0, first_round_ns_ = 0, last_round_ns_ = 0;
};

}  // namespace

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kSecond + ts.tv_nsec;
}

RecordSummary record(const RecordOptions& options) {
  check_options(options);
  if (options.attach_pid > 0 && !read_proc_stat(options.attach_pid)) {
    throw InputError(fmt::format("no process with pid {}", options.attach_pid));
  }
  Run run;
  describe_run(run, options);
  RecordingLoop loop(options, run);
  if (options.attach_pid > 0) {
    loop.sampler().scan_tree(options.attach_pid, monotonic_ns());
    if (!loop.sampler().any_python()) {
      auto refusals = loop.sampler().refusals();
      std::string why = refusals.empty() ? "" : ": " + refusals.front();
      throw InputError(fmt::format("pid {} is not a Python process and has no Python "
                                   "descendants{}", options.attach_pid, why));
    }
    return loop.run(nullptr, options.attach_pid);
  }
  ChildProcess child(options.command, loop.child_environment());
  return loop.run(&child, child.pid());
}

}  // namespace stepscope
