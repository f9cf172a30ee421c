#include "renderers/stack_snapshot.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"
#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

void append_thread_text(std::string& out, const ThreadSnapshot& thread) {
  if (thread.tid > 0) {
    out += fmt::format("\nThread {} ({}) [{}]", thread.tid, printable_utf8(thread.name),
                       thread_state_name(thread.state));
  } else {
    out += fmt::format("\nThread 0x{:x} [{}]", thread.python_thread_id, thread_state_name(thread.state));
  }
  out += thread.holds_gil ? " [holds GIL]\n" : "\n";
  for (const SnapshotFrame& frame : thread.frames) {
    out += fmt::format("    {} ({}:{})\n", printable_utf8(frame.function), printable_utf8(frame.file),
                       frame.line);
  }
}

void append_process_text(std::string& out, const ProcessSnapshot& process) {
  out += fmt::format("Process {}: {}\n", process.pid, printable_utf8(process.command));
  if (process.python_version.empty()) {
    out += fmt::format("    {}\n", printable_utf8(process.problem));
    return;
  }
  out += fmt::format("Python {} ({})\n", process.python_version, printable_utf8(process.image));
  if (!process.problem.empty()) out += fmt::format("    {}\n", printable_utf8(process.problem));
  for (const ThreadSnapshot& thread : process.threads) append_thread_text(out, thread);
}

void append_thread_json(std::string& out, const ThreadSnapshot& thread) {
  JsonObject o(out);
  o.number("tid", thread.tid).number("python_thread_id", thread.python_thread_id);
  o.text("name", thread.name).text("state", thread_state_name(thread.state));
  o.boolean("holds_gil", thread.holds_gil).field("frames");
  append_json_array(out, thread.frames, [](std::string& s, const SnapshotFrame& frame) {
    JsonObject f(s);
    f.text("function", frame.function).text("file", frame.file).number("line", frame.line);
  });
}

void append_process_json(std::string& out, const ProcessSnapshot& process) {
  JsonObject o(out);
  o.number("pid", process.pid).text("command", process.command).field("python");
  if (process.python_version.empty()) {
    out += "null";
  } else {
    JsonObject python(out);
    python.text("version", process.python_version).text("path", process.image);
  }
  o.text_or_null("problem", process.problem).field("threads");
  append_json_array(out, process.threads, append_thread_json);
}

}  // namespace

const char* thread_state_name(ThreadState state) {
  switch (state) {
    case ThreadState::kRunning:
      return "running";
    case ThreadState::kIdle:
      return "idle";
    case ThreadState::kDiskWait:
      return "disk wait";
    case ThreadState::kUnknown:
      break;
  }
  return "unknown";
}

void write_stack_snapshot_text(const std::vector<ProcessSnapshot>& processes, std::ostream& out) {
  std::string text;
  for (const ProcessSnapshot& process : processes) {
    if (!text.empty()) text += '\n';
    append_process_text(text, process);
  }
  out << text;
}

void write_stack_snapshot_json(const std::vector<ProcessSnapshot>& processes, std::ostream& out) {
  std::string text;
  {
    JsonObject root(text);
    root.field("processes");
    append_json_array(text, processes, append_process_json);
  }
  out << text << '\n';
}

}  // namespace stepscope
