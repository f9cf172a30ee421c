#include "collectors/stack_snapshot.hpp"

#include <chrono>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "collectors/flight_recorder_client.hpp"
#include "collectors/job_identity.hpp"
#include "collectors/native/native_snapshot.hpp"
#include "collectors/process/environment.hpp"
#include "collectors/process/proc_threads.hpp"
#include "collectors/process/tree.hpp"
#include "collectors/python/process.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// A sample may be torn when the target changes its stacks while we read
// them; a snapshot retries rather than show nothing.
constexpr int kSampleAttempts = 20;

ThreadSnapshot snapshot_thread(const PythonThreadStack& stack, const std::vector<ProcThread>& proc) {
  ThreadSnapshot thread;
  thread.tid = stack.native_tid;
  thread.python_thread_id = stack.python_thread_id;
  thread.holds_gil = stack.holds_gil;
  for (const ProcThread& p : proc) {
    if (p.tid != stack.native_tid) continue;
    thread.name = p.name;
    thread.state = thread_state_from_letter(p.state);
  }
  // The stack's strings live in the process's caches; the snapshot keeps copies.
  for (const PythonFrame& frame : stack.frames) {
    thread.frames.push_back({std::string(frame.function), std::string(frame.file), frame.line});
  }
  return thread;
}

// `native_indexes`: the symbol indexes the tree's native snapshots share;
// null for Python frames only.
void snapshot_threads(PythonProcess& process, const std::shared_ptr<SymbolIndexes>& native_indexes,
                      ProcessSnapshot& snapshot) {
  std::optional<NativeSnapshot> copies;
  if (native_indexes) {
    std::vector<int64_t> tids;
    for (const ProcThread& thread : read_proc_threads(snapshot.pid)) tids.push_back(thread.tid);
    copies.emplace(snapshot.pid, tids, native_indexes);  // before the Python stacks: the copies wait for no read
    if (!copies->problem().empty()) snapshot.problem = "no native frames: " + copies->problem();
  }
  std::vector<PythonThreadStack> stacks;
  bool ok = false;
  for (int attempt = 0; attempt < kSampleAttempts && !ok; ++attempt) ok = process.sample(stacks);
  if (!ok) {
    snapshot.problem = fmt::format("cannot read its stacks: {}", process.last_error());
    return;
  }
  std::vector<ProcThread> proc = read_proc_threads(snapshot.pid);
  for (const PythonThreadStack& stack : stacks) {
    ThreadSnapshot& thread = snapshot.threads.emplace_back(snapshot_thread(stack, proc));
    if (copies) copies->merged_frames(stack, thread.frames);
  }
}

std::optional<int64_t> number_in(const std::map<std::string, std::string>& values, const char* name) {
  auto found = values.find(name);
  if (found == values.end() || found->second.empty()) return std::nullopt;
  try {
    size_t used = 0;
    int64_t number = std::stoll(found->second, &used);
    if (used == found->second.size() && number >= 0) return number;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The job a rank belongs to, as its launcher told it: the scheduler's id,
// torchrun's run id (unless left at its default, "none"), else where its
// ranks meet.
std::string job_of(const std::map<std::string, std::string>& values) {
  auto value = [&](const char* name) {
    auto found = values.find(name);
    return found == values.end() ? std::string() : found->second;
  };
  if (!value("SLURM_JOB_ID").empty()) return value("SLURM_JOB_ID");
  if (std::string run = value("TORCHELASTIC_RUN_ID"); !run.empty() && run != "none") return run;
  if (!value("MASTER_ADDR").empty()) return value("MASTER_ADDR") + ":" + value("MASTER_PORT");
  return {};
}

// Rank, world size and job from the environment; the Flight Recorder of a
// Python rank whose hooks can answer. Returns the recorder's folder named
// in the environment (empty outside `record`).
std::string describe_rank(ProcessSnapshot& snapshot) {
  auto values = process_environment_values(
      snapshot.pid, {"RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "MASTER_ADDR",
                     "MASTER_PORT", "STEPSCOPE_CHANNEL"});
  auto channel = values.find("STEPSCOPE_CHANNEL");
  std::string folder = recorder_folder(channel == values.end() ? std::string() : channel->second);
  snapshot.rank = number_in(values, "RANK");
  snapshot.local_rank = number_in(values, "LOCAL_RANK");
  snapshot.world_size = number_in(values, "WORLD_SIZE");
  if (!snapshot.rank) return folder;
  snapshot.job = job_of(values);
  if (!snapshot.python_version.empty()) {
    snapshot.flight_recorder = ask_flight_recorder(snapshot.pid, folder, snapshot.flight_recorder_problem);
  }
  return folder;
}

ProcessSnapshot snapshot_process(pid_t pid, bool is_root, const std::shared_ptr<SymbolIndexes>& native_indexes) {
  ProcessSnapshot snapshot;
  snapshot.pid = pid;
  snapshot.command = read_command_line(pid).value_or("?");
  std::unique_ptr<PythonProcess> process;
  try {
    process = PythonProcess::attach(pid, &snapshot.problem);
  } catch (const InputError& e) {
    if (is_root) throw;  // the process the user named: an error with the reason
    snapshot.problem = e.what();
    return snapshot;
  }
  if (!process) return snapshot;
  snapshot.python_version = process->version();
  snapshot.image = process->image_path();
  snapshot_threads(*process, native_indexes, snapshot);
  return snapshot;
}

}  // namespace

Dump snapshot_tree(pid_t root, bool native) {
  std::vector<pid_t> tree = process_tree(root);
  if (tree.empty()) throw InputError(fmt::format("no process with pid {}", root));
  Dump dump;
  dump.host = this_host();
  dump.time_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  dump.root_pid = root;
  // The recorder's folder also keeps the exit notes of the ranks now gone.
  std::set<std::string> recorder_folders;
  auto native_indexes = native ? std::make_shared<SymbolIndexes>() : nullptr;
  for (pid_t pid : tree) {
    std::string folder =
        describe_rank(dump.processes.emplace_back(snapshot_process(pid, pid == root, native_indexes)));
    if (!folder.empty()) recorder_folders.insert(folder);
  }
  for (const std::string& folder : recorder_folders) {
    for (ExitedRank& exited : exited_ranks(folder)) dump.exited.push_back(std::move(exited));
  }
  return dump;
}

}  // namespace stepscope
