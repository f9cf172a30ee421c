// stepscope dump --pid PID [--json]: the current Python stack of every
// thread of every Python process in the tree under PID. The first thing to
// run on a hung training job (NCCL or DataLoader hangs).
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "collectors/proc_threads.hpp"
#include "collectors/process_tree.hpp"
#include "collectors/python_process.hpp"
#include "renderers/escape.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {

// A sample may be torn when the target changes its stacks while we read
// them; a dump retries rather than show nothing.
constexpr int kSampleAttempts = 20;

struct DumpOptions {
  pid_t pid = 0;
  bool json = false;
};

struct ThreadDump {
  PythonThreadStack stack;
  std::string name;   // /proc/PID/task/TID/comm
  std::string state;  // "running", "disk wait", "idle" or "unknown"
  // The stack's frames point into the process's caches; copies survive it.
  std::vector<std::string> functions, files;
};

struct ProcessDump {
  pid_t pid = 0;
  std::string command;
  std::string version, image;  // empty when not Python
  std::string problem;         // why not Python, or why the stacks are missing
  std::vector<ThreadDump> threads;
};

// The thread's scheduler state as the recorder classifies it: running (R),
// disk wait (D: stuck in the kernel, often on I/O, worth seeing in a hang)
// or idle (S, T, ...: waiting).
std::string state_name(char letter) {
  switch (thread_state_from_letter(letter)) {
    case ThreadState::kRunning:
      return "running";
    case ThreadState::kDiskWait:
      return "disk wait";
    default:
      return "idle";
  }
}

void sample_threads(PythonProcess& process, ProcessDump& dump) {
  std::vector<PythonThreadStack> stacks;
  bool ok = false;
  for (int attempt = 0; attempt < kSampleAttempts && !ok; ++attempt) ok = process.sample(stacks);
  if (!ok) {
    dump.problem = fmt::format("cannot read its stacks: {}", process.last_error());
    return;
  }
  std::vector<ProcThread> proc_threads = read_proc_threads(dump.pid);
  for (PythonThreadStack& stack : stacks) {
    ThreadDump thread;
    thread.state = "unknown";
    for (const ProcThread& proc : proc_threads) {
      if (proc.tid != stack.native_tid) continue;
      thread.name = proc.name;
      thread.state = state_name(proc.state);
    }
    for (const PythonFrame& frame : stack.frames) {
      thread.functions.emplace_back(frame.function);
      thread.files.emplace_back(frame.file);
    }
    thread.stack = std::move(stack);
    dump.threads.push_back(std::move(thread));
  }
}

ProcessDump dump_process(pid_t pid, bool is_root) {
  ProcessDump dump;
  dump.pid = pid;
  dump.command = read_command_line(pid).value_or("?");
  std::unique_ptr<PythonProcess> process;
  try {
    process = PythonProcess::attach(pid, &dump.problem);
  } catch (const InputError& e) {
    if (is_root) throw;  // the process asked for: exit status 2 with the reason
    dump.problem = e.what();
    return dump;
  }
  if (!process) return dump;
  dump.version = process->version();
  dump.image = process->image_path();
  sample_threads(*process, dump);
  return dump;
}

std::string printable(std::string_view text) { return printable_utf8(text); }

void write_text(const std::vector<ProcessDump>& dumps) {
  std::string out;
  for (const ProcessDump& dump : dumps) {
    if (!out.empty()) out += '\n';
    out += fmt::format("Process {}: {}\n", dump.pid, printable(dump.command));
    if (dump.version.empty()) {
      out += fmt::format("    {}\n", printable(dump.problem));
      continue;
    }
    out += fmt::format("Python {} ({})\n", dump.version, printable(dump.image));
    if (!dump.problem.empty()) out += fmt::format("    {}\n", printable(dump.problem));
    for (const ThreadDump& thread : dump.threads) {
      if (thread.stack.native_tid > 0) {
        out += fmt::format("\nThread {} ({}) [{}]", thread.stack.native_tid,
                           printable(thread.name), thread.state);
      } else {
        out += fmt::format("\nThread 0x{:x} [{}]", thread.stack.python_thread_id, thread.state);
      }
      out += thread.stack.holds_gil ? " [holds GIL]\n" : "\n";
      for (size_t i = 0; i < thread.functions.size(); ++i) {
        out += fmt::format("    {} ({}:{})\n", printable(thread.functions[i]),
                           printable(thread.files[i]), thread.stack.frames[i].line);
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void append_json_thread(std::string& out, const ThreadDump& thread) {
  out += fmt::format("{{\"tid\": {}, \"python_thread_id\": {}, \"name\": ",
                     thread.stack.native_tid, thread.stack.python_thread_id);
  append_json_string(out, thread.name);
  out += ", \"state\": ";
  append_json_string(out, thread.state);
  out += fmt::format(", \"holds_gil\": {}, \"frames\": [", thread.stack.holds_gil);
  for (size_t i = 0; i < thread.functions.size(); ++i) {
    out += i > 0 ? ", {\"function\": " : "{\"function\": ";
    append_json_string(out, thread.functions[i]);
    out += ", \"file\": ";
    append_json_string(out, thread.files[i]);
    out += fmt::format(", \"line\": {}}}", thread.stack.frames[i].line);
  }
  out += "]}";
}

void write_json(const std::vector<ProcessDump>& dumps) {
  std::string out = "{\"processes\": [";
  for (size_t p = 0; p < dumps.size(); ++p) {
    const ProcessDump& dump = dumps[p];
    out += fmt::format("{}{{\"pid\": {}, \"command\": ", p > 0 ? ", " : "", dump.pid);
    append_json_string(out, dump.command);
    out += ", \"python\": ";
    if (dump.version.empty()) {
      out += "null";
    } else {
      out += "{\"version\": ";
      append_json_string(out, dump.version);
      out += ", \"path\": ";
      append_json_string(out, dump.image);
      out += "}";
    }
    out += ", \"problem\": ";
    if (dump.problem.empty()) {
      out += "null";
    } else {
      append_json_string(out, dump.problem);
    }
    out += ", \"threads\": [";
    for (size_t t = 0; t < dump.threads.size(); ++t) {
      if (t > 0) out += ", ";
      append_json_thread(out, dump.threads[t]);
    }
    out += "]}";
  }
  out += "]}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

int run_dump(const DumpOptions& options) {
  std::vector<pid_t> tree = process_tree(options.pid);
  if (tree.empty()) throw InputError(fmt::format("no process with pid {}", options.pid));
  std::vector<ProcessDump> dumps;
  for (pid_t pid : tree) dumps.push_back(dump_process(pid, pid == options.pid));
  if (options.json) {
    write_json(dumps);
  } else {
    write_text(dumps);
  }
  return 0;
}

}  // namespace

Command add_dump_command(CLI::App& app) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dump", "Print the current Python stack of every thread of a process tree (hung jobs)");
  cmd->add_option("-p,--pid", options->pid, "the root of the process tree")->required();
  cmd->add_flag("--json", options->json, "one JSON document instead of text");
  return [options] { return run_dump(*options); };
}

}  // namespace stepscope::cli
