#include "collectors/stack_snapshot.hpp"

#include <memory>

#include <fmt/format.h>

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

void snapshot_threads(PythonProcess& process, ProcessSnapshot& snapshot) {
  std::vector<PythonThreadStack> stacks;
  bool ok = false;
  for (int attempt = 0; attempt < kSampleAttempts && !ok; ++attempt) ok = process.sample(stacks);
  if (!ok) {
    snapshot.problem = fmt::format("cannot read its stacks: {}", process.last_error());
    return;
  }
  std::vector<ProcThread> proc = read_proc_threads(snapshot.pid);
  for (const PythonThreadStack& stack : stacks) snapshot.threads.push_back(snapshot_thread(stack, proc));
}

ProcessSnapshot snapshot_process(pid_t pid, bool is_root) {
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
  snapshot_threads(*process, snapshot);
  return snapshot;
}

}  // namespace

std::vector<ProcessSnapshot> snapshot_tree(pid_t root) {
  std::vector<pid_t> tree = process_tree(root);
  if (tree.empty()) throw InputError(fmt::format("no process with pid {}", root));
  std::vector<ProcessSnapshot> out;
  for (pid_t pid : tree) out.push_back(snapshot_process(pid, pid == root));
  return out;
}

}  // namespace stepscope
