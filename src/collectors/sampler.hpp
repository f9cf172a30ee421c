// The sampler: Python stacks of a whole process tree, into a Run.
//
// It keeps track of every process under a root (DataLoader workers, torchrun
// ranks, subprocesses), attaches to the Python ones, and on each sample()
// adds one Sample per Python thread with the thread's scheduler state. The
// recording loop (recorder.hpp) decides when; this class only knows how.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectors/native/native_stacks.hpp"
#include "collectors/process/exit_watch.hpp"
#include "collectors/process/fork_gate.hpp"
#include "collectors/process/proc_threads.hpp"
#include "collectors/process/thread_state_reader.hpp"
#include "collectors/process/tree_scanner.hpp"
#include "collectors/python/process.hpp"
#include "run/run.hpp"

namespace stepscope {

struct SamplerStats {
  uint64_t rounds = 0;         // calls to sample()
  uint64_t samples = 0;        // thread stacks added to the run
  uint64_t process_reads = 0;  // stack reads of a Python process, one per process and round
  uint64_t error_samples = 0;  // process reads that were torn or refused (not those of an exiting process)
  uint64_t stacks_kept = 0;    // samples whose stack was the last round's, not read again (the thread had not run)
  uint64_t torn_stacks = 0;    // samples whose frame chain ended in a generator that had yielded: joined to a reread
  uint64_t torn_stacks_unjoined = 0;  // of them, those no reread made whole: kept as read
  uint64_t processes_seen = 0;
  uint64_t python_processes = 0;
  NativeStackStats native;  // with enable_native only
};

class Sampler {
 public:
  explicit Sampler(Run& run);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Finds processes that appeared under `root` (attaching to Python ones),
  // notices processes that exec'd a new program, and finalizes those that
  // exited. Cheap enough to call every few tens of milliseconds: the tree
  // itself is walked only when the ForkGate or an exit says it may have
  // changed. A sampled process's stat (its exit or exec) is read when a
  // sample of it failed and at least every 250 ms; any other's every scan.
  void scan_tree(pid_t root, int64_t now_ns);

  // One sample of every thread of every live Python process.
  void sample(int64_t now_ns);

  // From now on, the samples of threads that ran since the last round merge
  // their native stacks (copied by the kernel every `period_ns` of a
  // thread's CPU time) with their Python stacks: `record --native`.
  void enable_native(int64_t period_ns) { native_period_ns_ = period_ns; }

  // Marks the processes still alive as ended at `now_ns` (the recording ends).
  void finish(int64_t now_ns);

  // The exit status of a tracked process as the launcher learned it.
  void set_exit_status(pid_t pid, int status);

  bool any_alive() const;
  // The processes of the tree alive at the last scan, Python or not.
  std::vector<pid_t> live_pids() const;
  bool any_python() const;
  const SamplerStats& stats() const { return stats_; }
  // One line per process whose memory could not be read, saying why.
  std::vector<std::string> refusals() const;

 private:
  struct Tracked;

  struct LiveProcesses {
    std::vector<std::pair<Tracked*, ProcStat>> alive;  // with the stat just read
    std::vector<Tracked*> unchecked;  // sampled without a failure: stat not read
    bool some_ended = false;
  };
  LiveProcesses end_exited(int64_t now_ns);
  void follow_exec(Tracked& tracked, const ProcStat& stat, int64_t now_ns);
  void track_new(pid_t pid, int64_t now_ns, std::optional<uint64_t> ended_start);
  void attach_python(Tracked& tracked, int64_t now_ns);
  void keep_launch_facts(pid_t pid);
  void keep_exit_status(Tracked& tracked, const std::optional<ProcStat>& stat);
  // Ends a tracked process; `stat` is the stat that showed it gone, if read.
  void end_process(Tracked& tracked, int64_t now_ns, const std::optional<ProcStat>& stat);
  void sample_process(Tracked& tracked, int64_t now_ns);
  StackId intern_stack(Tracked& tracked, const PythonThreadStack& stack, size_t reused,
                       std::vector<StackId>& path);
  FrameId python_frame(Tracked& tracked, const PythonFrame& frame);
  void start_native(Tracked& tracked);
  void note_thread(Tracked& tracked, int64_t tid);
  std::optional<ProcStat> read_stat(Tracked& tracked);

  Run& run_;
  std::map<pid_t, std::unique_ptr<Tracked>> processes_;
  ProcessTreeScanner tree_scanner_;
  ForkGate fork_gate_;
  ExitWatch exit_watch_;
  std::vector<pid_t> tree_;     // as the last walk found it
  std::vector<pid_t> present_;  // the same, sorted
  ThreadStateReader thread_states_;
  SamplerStats stats_;
  int64_t native_period_ns_ = 0;  // 0: Python stacks only
  // The native unwinders' symbol indexes, shared by the tree's processes.
  std::shared_ptr<SymbolIndexes> symbol_indexes_ = std::make_shared<SymbolIndexes>();
};

}  // namespace stepscope
