#include "collectors/sampler.hpp"

#include <unistd.h>

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "collectors/process/child_process.hpp"
#include "collectors/process/environment.hpp"
#include "collectors/process/proc_threads.hpp"
#include "collectors/process/thread_looks.hpp"
#include "util/error.hpp"
#include "util/unique_fd.hpp"

namespace stepscope {

namespace {

std::string read_exe_link(pid_t pid) {
  char target[4096];
  std::string link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = readlink(link.c_str(), target, sizeof target);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

constexpr int64_t kFirstRetry = 50'000'000;
constexpr int64_t kExeCheckInterval = 1'000'000'000;
// How long a sampled process's stat may go unread while its samples succeed.
constexpr int64_t kStatCheckInterval = 250'000'000;
constexpr int64_t kLastRetry = 2'000'000'000;

}  // namespace

struct Sampler::Tracked {
  pid_t pid = 0;
  UniqueFd stat_fd;          // /proc/PID/stat, kept open for the tree scans
  uint64_t start_ticks = 0;  // tells this process from a later one with the same pid
  // Where its stack and program text are: placed anew at each exec.
  uint64_t start_stack = 0, start_code = 0, end_code = 0;
  size_t run_index = 0;      // its entry in run.processes
  std::string exe;           // /proc/PID/exe, to notice exec
  int64_t next_exe_check_ns = 0;
  std::unique_ptr<PythonProcess> python;
  std::unique_ptr<NativeStacks> native;  // with Sampler::enable_native
  // A process just forked or exec'd may not have mapped libpython yet, so
  // attaching is retried, backing off, for processes that are not Python.
  int64_t next_attach_ns = 0;
  int64_t attach_backoff_ns = 0;
  bool alive = true;
  // The stat of a process that is sampled is read when a sample failed or
  // found no thread (an exit or an exec makes the read fail: the memory it
  // planned is gone or moved) and at least every kStatCheckInterval; that
  // of any other process at every scan.
  bool check_stat = false;
  int64_t next_stat_check_ns = 0;
  // PythonFrame::key -> the Run's FrameId, so a frame seen again costs a lookup.
  std::unordered_map<uint64_t, FrameId> frames;
  // The stacks interned at the last round for each position of the reader's
  // output: path[i] is the StackId of its outermost i + 1 frames. Frames
  // the reader reports unchanged need no interning.
  struct LastStack {
    uint64_t round = 0;
    std::vector<StackId> path;
  };
  std::vector<LastStack> last_stacks;
  // The reader's output, kept per process: the reader leaves an unchanged
  // stack's frames in place from one read to the next.
  std::vector<PythonThreadStack> stacks;
  std::unordered_set<int64_t> known_threads;
  std::string why_not;  // why the last attach failed
  // Its threads' states, read before their stacks (those that have not run
  // since the last round keep their stacks unread). Made with the Tracked:
  // it needs the sampler's ThreadStateReader.
  std::optional<ThreadLooks> looks;
};

Sampler::Sampler(Run& run) : run_(run) {}
Sampler::~Sampler() = default;

// /proc/PID/stat through a descriptor kept open: it reads nothing once the
// process is reaped, even if its pid is reused.
std::optional<ProcStat> Sampler::read_stat(Tracked& tracked) {
  if (!tracked.stat_fd.valid()) {
    tracked.stat_fd = UniqueFd::open_read_only(fmt::format("/proc/{}/stat", tracked.pid).c_str());
    if (!tracked.stat_fd.valid()) return std::nullopt;
  }
  char text[1024];  // the name is at most 64 bytes, the numbers after it a few hundred
  ssize_t n = ::pread(tracked.stat_fd.get(), text, sizeof text, 0);
  if (n <= 0) return std::nullopt;
  return parse_proc_stat(std::string_view(text, static_cast<size_t>(n)));
}

void Sampler::scan_tree(pid_t root, int64_t now_ns) {
  LiveProcesses live = end_exited(now_ns);
  // The gate is read before the walk, so that a fork after it moves it for
  // the next scan, and at every scan, so that it always compares with the
  // scan before. An exit walks the tree too: the exited process's children
  // were reparented out of it, which no new pid tells.
  const bool may_have_forked = fork_gate_.must_walk();
  if (may_have_forked || live.some_ended || tree_.empty()) {
    tree_ = tree_scanner_.scan(root);
    present_.assign(tree_.begin(), tree_.end());
    std::sort(present_.begin(), present_.end());
  }
  auto present = [&](const Tracked* tracked) {
    return std::binary_search(present_.begin(), present_.end(), tracked->pid);
  };
  for (auto& [tracked, stat] : live.alive) {
    if (!present(tracked)) {
      end_process(*tracked, now_ns, std::nullopt);
      continue;
    }
    follow_exec(*tracked, stat, now_ns);
  }
  for (Tracked* tracked : live.unchecked) {
    if (!present(tracked)) end_process(*tracked, now_ns, std::nullopt);
  }
  for (pid_t pid : tree_) {
    auto found = processes_.find(pid);
    if (found == processes_.end()) {
      track_new(pid, now_ns, std::nullopt);
    } else if (!found->second->alive) {
      track_new(pid, now_ns, found->second->start_ticks);
    }
  }
}

// Ends the tracked processes that exited (a zombie's exit status is kept)
// and returns the others, with their stat when it was read.
Sampler::LiveProcesses Sampler::end_exited(int64_t now_ns) {
  LiveProcesses live;
  for (auto& [pid, tracked] : processes_) {
    if (!tracked->alive) continue;
    if (tracked->python && !tracked->check_stat && now_ns < tracked->next_stat_check_ns) {
      live.unchecked.push_back(tracked.get());
      continue;
    }
    auto stat = read_stat(*tracked);
    const bool same_process = stat && stat->start_ticks == tracked->start_ticks;
    if (same_process && stat->state != 'Z') {
      tracked->check_stat = false;
      tracked->next_stat_check_ns = now_ns + kStatCheckInterval;
      live.alive.emplace_back(tracked.get(), *stat);
      continue;
    }
    end_process(*tracked, now_ns, stat);
    live.some_ended = true;
  }
  return live;
}

// An exec, even of the same program (multiprocessing's spawn and forkserver
// fork the interpreter and exec it again): the process we attached to is
// gone from that address space. Each exec places the stack and the program
// anew (address space layout randomization), so stat tells; /proc/PID/exe,
// whose path the kernel builds at each readlink, is asked only once a
// second, for machines that turned the randomization off. A process that is
// not (yet) Python is retried, backing off.
void Sampler::follow_exec(Tracked& tracked, const ProcStat& stat, int64_t now_ns) {
  // An exiting process lets go of its memory before it becomes a zombie
  // (tearing down a large address space takes a while): stat then shows
  // neither stack nor text, and its command line reads empty. That is no
  // exec: what we know of the process stays.
  const bool had_memory = tracked.start_stack != 0 || tracked.start_code != 0 || tracked.end_code != 0;
  if (had_memory && stat.start_stack == 0 && stat.start_code == 0 && stat.end_code == 0) return;
  const bool moved = stat.start_stack != tracked.start_stack || stat.start_code != tracked.start_code ||
                     stat.end_code != tracked.end_code;
  std::string exe;
  if (moved || now_ns >= tracked.next_exe_check_ns) {
    exe = read_exe_link(tracked.pid);
    tracked.next_exe_check_ns = now_ns + kExeCheckInterval;
  }
  if (moved || (!exe.empty() && exe != tracked.exe)) {
    if (!exe.empty()) tracked.exe = exe;
    tracked.start_stack = stat.start_stack;
    tracked.start_code = stat.start_code;
    tracked.end_code = stat.end_code;
    if (auto cmd = read_command_line(tracked.pid)) {
      run_.processes[tracked.run_index].command = run_.strings.intern(*cmd);
    }
    keep_launch_facts(tracked.pid);
    tracked.frames.clear();
    tracked.last_stacks.clear();
    tracked.attach_backoff_ns = 0;
    attach_python(tracked, now_ns);
  } else if (!tracked.python && now_ns >= tracked.next_attach_ns) {
    attach_python(tracked, now_ns);
  }
}

// `ended_start`: the start time of the process this pid named that was
// ended; the pid is a new process only if its start time differs.
void Sampler::track_new(pid_t pid, int64_t now_ns, std::optional<uint64_t> ended_start) {
  auto stat = read_proc_stat(pid);
  if (!stat || stat->state == 'Z') return;  // already gone
  if (ended_start == stat->start_ticks) return;  // the process we ended, not a new one
  auto cmd = read_command_line(pid);
  if (!cmd) return;
  auto tracked = std::make_unique<Tracked>();
  tracked->pid = pid;
  tracked->start_ticks = stat->start_ticks;
  tracked->start_stack = stat->start_stack;
  tracked->start_code = stat->start_code;
  tracked->end_code = stat->end_code;
  tracked->exe = read_exe_link(pid);
  tracked->next_exe_check_ns = now_ns + kExeCheckInterval;
  tracked->run_index = run_.processes.size();
  exit_watch_.watch(pid, stat->start_ticks);
  tracked->looks.emplace(thread_states_, pid);
  Process& process = run_.add_process(pid, *cmd, stat->parent_pid);
  process.start_ns = now_ns;
  ++stats_.processes_seen;
  keep_launch_facts(pid);
  attach_python(*tracked, now_ns);
  processes_[pid] = std::move(tracked);
}

void Sampler::attach_python(Tracked& tracked, int64_t now_ns) {
  std::string why_not;
  try {
    tracked.python = PythonProcess::attach(tracked.pid, &why_not);
  } catch (const InputError& e) {
    tracked.python.reset();
    why_not = e.what();
  }
  if (!tracked.python) {
    tracked.attach_backoff_ns = std::clamp<int64_t>(tracked.attach_backoff_ns * 2, kFirstRetry, kLastRetry);
    tracked.next_attach_ns = now_ns + tracked.attach_backoff_ns;
    tracked.why_not = why_not;
    return;
  }
  ++stats_.python_processes;
  run_.metadata[fmt::format("python_version.{}", tracked.pid)] = tracked.python->version();
  start_native(tracked);
}

void Sampler::start_native(Tracked& tracked) {
  tracked.native.reset();
  if (native_period_ns_ <= 0) return;
  try {
    tracked.native =
        std::make_unique<NativeStacks>(tracked.pid, native_period_ns_, run_, stats_.native, symbol_indexes_);
  } catch (const InputError& e) {  // its Python stacks are still sampled
    if (stats_.native.first_problem.empty()) {
      stats_.native.first_problem = fmt::format("pid {}: {}", tracked.pid, e.what());
    }
  }
}

// Which rank of a job the process is, as its launcher (torchrun, a SLURM
// task) set in its environment: metadata process.PID.rank, local_rank and
// world_size. Read at its start and again at each exec (a forked child
// starts with its parent's environment and gets its own at the exec).
void Sampler::keep_launch_facts(pid_t pid) {
  const std::vector<std::pair<std::string_view, std::string_view>> facts = {
      {"RANK", "rank"}, {"LOCAL_RANK", "local_rank"}, {"WORLD_SIZE", "world_size"}};
  std::vector<std::string_view> names;
  for (const auto& [name, key] : facts) names.push_back(name);
  std::map<std::string, std::string> values = process_environment_values(pid, names);
  for (const auto& [name, key] : facts) {
    std::string metadata_key = fmt::format("process.{}.{}", pid, key);
    auto found = values.find(std::string(name));
    if (found != values.end()) {
      run_.metadata[metadata_key] = found->second;
    } else {
      run_.metadata.erase(metadata_key);  // set before an exec that dropped it
    }
  }
}

// A zombie's stat holds its wait status (once reaped, nothing does): the
// stat just read, or the one the exit watch read the moment the process
// turned zombie, when its parent reaped it before a scan came. The run keeps
// it as a shell reports it (128 + signal when killed).
void Sampler::keep_exit_status(Tracked& tracked, const std::optional<ProcStat>& stat) {
  std::optional<int> status = exit_watch_.take_exit_status(tracked.pid, tracked.start_ticks);
  if (stat && stat->start_ticks == tracked.start_ticks && stat->state == 'Z' && stat->exit_code >= 0) {
    status = shell_exit_status(stat->exit_code);
  }
  if (status) run_.processes[tracked.run_index].exit_status = *status;
}

void Sampler::end_process(Tracked& tracked, int64_t now_ns, const std::optional<ProcStat>& stat) {
  keep_exit_status(tracked, stat);
  tracked.alive = false;
  tracked.stat_fd.reset();
  tracked.python.reset();
  tracked.native.reset();
  thread_states_.forget_process(tracked.pid);
  run_.processes[tracked.run_index].end_ns = now_ns;
}

void Sampler::set_exit_status(pid_t pid, int status) {
  auto found = processes_.find(pid);
  if (found != processes_.end()) run_.processes[found->second->run_index].exit_status = status;
}

void Sampler::sample(int64_t now_ns) {
  ++stats_.rounds;
  for (auto& [pid, tracked] : processes_) {
    if (tracked->alive && tracked->python) sample_process(*tracked, now_ns);
  }
  stats_.native.symbol_indexes = symbol_indexes_->made();
}

void Sampler::sample_process(Tracked& tracked, int64_t now_ns) {
  std::vector<PythonThreadStack>& stacks = tracked.stacks;
  tracked.looks->begin_round();
  const PythonProcess& python = *tracked.python;
  const uint64_t kept_before = python.stacks_kept_still(), torn_before = python.torn_stacks(),
                 unjoined_before = python.torn_stacks_unjoined();
  const bool read = tracked.python->sample(stacks, &*tracked.looks);
  if (read || !python.memory_gone()) ++stats_.process_reads;
  stats_.stacks_kept += python.stacks_kept_still() - kept_before;
  stats_.torn_stacks += python.torn_stacks() - torn_before;
  stats_.torn_stacks_unjoined += python.torn_stacks_unjoined() - unjoined_before;
  if (!read) {
    // An exiting process tears its memory down before it becomes a zombie,
    // which takes a while for a large one: those rounds are no error
    // samples, and stat is read at the next round until it ends.
    if (!tracked.python->memory_gone()) ++stats_.error_samples;
    tracked.check_stat = true;
    return;
  }
  // A live interpreter has a thread state at least: none may be memory the
  // process no longer holds (an exec), so the next scan looks.
  if (stacks.empty()) tracked.check_stat = true;
  if (tracked.last_stacks.size() < stacks.size()) tracked.last_stacks.resize(stacks.size());
  if (tracked.native) tracked.native->begin_round();
  for (size_t slot = 0; slot < stacks.size(); ++slot) {
    const PythonThreadStack& stack = stacks[slot];
    if (stack.native_tid <= 0) continue;  // a thread not yet (or no longer) running
    note_thread(tracked, stack.native_tid);
    auto state = tracked.looks->state(stack.native_tid);
    if (!state) continue;  // the thread exited since the stack was read
    Tracked::LastStack& last = tracked.last_stacks[slot];
    // Rounds count from 1: round 0 never was.
    const size_t reused = last.round + 1 == stats_.rounds ? stack.same_outer_frames : 0;
    StackId id = intern_stack(tracked, stack, reused, last.path);
    const ThreadState thread_state = thread_state_from_letter(*state);
    if (tracked.native) {
      auto python_frame_id = [&](const PythonFrame& frame) { return python_frame(tracked, frame); };
      const bool running = thread_state == ThreadState::kRunning;
      const StackId merged = tracked.native->merged_stack(stack, running, python_frame_id);
      if (merged != StackTree::kRoot) id = merged;
    }
    last.round = stats_.rounds;
    // A kernel thread id fits 32 bits; one that does not was read torn: unknown.
    const int32_t tid = fits_sample_id(stack.native_tid) ? static_cast<int32_t>(stack.native_tid) : -1;
    run_.samples.push_back({now_ns, tracked.pid, tid, id, thread_state, stack.holds_gil});
    ++stats_.samples;
  }
}

// The outermost `reused` frames are those `path` was built from: their
// StackIds are kept, and only the frames inside them are interned.
StackId Sampler::intern_stack(Tracked& tracked, const PythonThreadStack& stack, size_t reused,
                              std::vector<StackId>& path) {
  reused = std::min({reused, path.size(), stack.frames.size()});
  path.resize(reused);
  StackId id = reused > 0 ? path.back() : StackTree::kRoot;
  for (auto frame = stack.frames.rbegin() + static_cast<std::ptrdiff_t>(reused);
       frame != stack.frames.rend(); ++frame) {
    id = run_.stacks.push(id, python_frame(tracked, *frame));
    path.push_back(id);
  }
  return id;
}

FrameId Sampler::python_frame(Tracked& tracked, const PythonFrame& frame) {
  auto [slot, inserted] = tracked.frames.try_emplace(frame.key, 0);
  if (inserted) slot->second = run_.intern_frame(frame.function, frame.file, std::max(frame.line, 0));
  return slot->second;
}

void Sampler::note_thread(Tracked& tracked, int64_t tid) {
  if (!tracked.known_threads.insert(tid).second) return;
  run_.add_thread(tracked.pid, tid, read_thread_name(tracked.pid, tid).value_or(""));
}

void Sampler::finish(int64_t now_ns) {
  for (auto& [pid, tracked] : processes_) {
    if (!tracked->alive) continue;
    // A process that exited since its stat was last read may be a zombie
    // still: its exit status is kept.
    end_process(*tracked, now_ns, read_stat(*tracked));
  }
}

std::vector<std::string> Sampler::refusals() const {
  // Non-Python processes (shells, compilers, nvidia-smi) are normal in a
  // tree; only processes whose memory was refused are worth a word.
  std::vector<std::string> out;
  for (const auto& [pid, tracked] : processes_) {
    const std::string& why = tracked->why_not;
    if (why.find("denied") != std::string::npos || why.find("refused") != std::string::npos ||
        why.find("not permitted") != std::string::npos) {
      out.push_back(fmt::format("pid {}: {}", pid, why));
    }
  }
  return out;
}

bool Sampler::any_alive() const {
  return std::any_of(processes_.begin(), processes_.end(),
                     [](const auto& entry) { return entry.second->alive; });
}

std::vector<pid_t> Sampler::live_pids() const {
  std::vector<pid_t> pids;
  for (const auto& [pid, tracked] : processes_) {
    if (tracked->alive) pids.push_back(pid);
  }
  return pids;
}

bool Sampler::any_python() const { return stats_.python_processes > 0; }

}  // namespace stepscope
