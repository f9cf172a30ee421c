#include "renderers/stack_snapshot.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"
#include "run/frame_label.hpp"
#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

// Native and marker frames as the other stack renderers name them.
std::string frame_label(const SnapshotFrame& frame) {
  StringTable strings;
  const Frame interned{strings.intern(frame.function), strings.intern(frame.file), frame.line, frame.kind};
  return stepscope::frame_label(strings, interned);
}

void append_thread_text(std::string& out, const ThreadSnapshot& thread) {
  if (thread.tid > 0) {
    out += fmt::format("\nThread {} ({}) [{}]", thread.tid, printable_utf8(thread.name),
                       thread_state_name(thread.state));
  } else {
    out += fmt::format("\nThread 0x{:x} [{}]", thread.python_thread_id, thread_state_name(thread.state));
  }
  out += thread.holds_gil ? " [holds GIL]\n" : "\n";
  for (const SnapshotFrame& frame : thread.frames) {
    if (frame.kind == FrameKind::kPython) {
      out += fmt::format("    {} ({}:{})\n", printable_utf8(frame.function), printable_utf8(frame.file),
                         frame.line);
    } else {
      out += fmt::format("    {}\n", printable_utf8(frame_label(frame)));
    }
  }
}

std::string rank_text(const std::optional<int64_t>& rank, const std::optional<int64_t>& world_size) {
  if (!rank) return {};
  return world_size ? fmt::format(" (rank {} of {})", *rank, *world_size) : fmt::format(" (rank {})", *rank);
}

void append_process_text(std::string& out, const ProcessSnapshot& process) {
  out += fmt::format("Process {}{}: {}\n", process.pid, rank_text(process.rank, process.world_size),
                     printable_utf8(process.command));
  if (process.python_version.empty()) {
    out += fmt::format("    {}\n", printable_utf8(process.problem));
    return;
  }
  out += fmt::format("Python {} ({})\n", process.python_version, printable_utf8(process.image));
  if (!process.problem.empty()) out += fmt::format("    {}\n", printable_utf8(process.problem));
  for (const ThreadSnapshot& thread : process.threads) append_thread_text(out, thread);
  if (process.flight_recorder) {
    out += fmt::format("\nFlight Recorder: {} collectives kept\n", process.flight_recorder->entries.size());
  } else if (!process.flight_recorder_problem.empty()) {
    out += fmt::format("\nFlight Recorder: none ({})\n", printable_utf8(process.flight_recorder_problem));
  }
}

void append_exited_text(std::string& out, const ExitedRank& exited) {
  out += fmt::format("Process {}{}: exited", exited.pid, rank_text(exited.rank, exited.world_size));
  if (exited.status) out += fmt::format(" with status {}", *exited.status);
  if (!exited.exception.empty()) out += fmt::format(" ({})", printable_utf8(exited.exception));
  out += '\n';
}

void append_thread_json(std::string& out, const ThreadSnapshot& thread) {
  JsonObject o(out);
  o.number("tid", thread.tid).number("python_thread_id", thread.python_thread_id);
  o.text("name", thread.name).text("state", thread_state_name(thread.state));
  o.boolean("holds_gil", thread.holds_gil).field("frames");
  append_json_array(out, thread.frames, [](std::string& s, const SnapshotFrame& frame) {
    JsonObject f(s);
    f.text("function", frame.function).text("file", frame.file).number("line", frame.line);
    if (frame.kind != FrameKind::kPython) f.text("kind", frame_kind_name(frame.kind));
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
  o.text_or_null("problem", process.problem);
  o.number_or_null("rank", process.rank).number_or_null("local_rank", process.local_rank);
  o.number_or_null("world_size", process.world_size).text_or_null("job", process.job);
  o.field("threads");
  append_json_array(out, process.threads, append_thread_json);
  // torch's own document, as it gave it: checked to be well-formed JSON
  // when it was received, so it cannot break this one.
  o.literal("flight_recorder", process.flight_recorder ? std::string_view(process.flight_recorder->json) : "null");
  o.text_or_null("flight_recorder_problem", process.flight_recorder_problem);
}

void append_exited_json(std::string& out, const ExitedRank& exited) {
  JsonObject o(out);
  o.number("pid", exited.pid).number_or_null("rank", exited.rank).number_or_null("world_size", exited.world_size);
  o.number_or_null("status", exited.status).text_or_null("exception", exited.exception);
}

}  // namespace

void write_dump_text(const Dump& dump, std::ostream& out) {
  std::string text;
  for (const ProcessSnapshot& process : dump.processes) {
    if (!text.empty()) text += '\n';
    append_process_text(text, process);
  }
  if (!dump.exited.empty()) text += '\n';
  for (const ExitedRank& exited : dump.exited) append_exited_text(text, exited);
  out << text;
}

void write_dump_json(const Dump& dump, std::ostream& out) {
  std::string text;
  {
    JsonObject root(text);
    root.text("format", kDumpFormat).text("host", dump.host).number("time_unix_ns", dump.time_unix_ns);
    root.number("root_pid", dump.root_pid).field("processes");
    append_json_array(text, dump.processes, append_process_json);
    root.field("exited");
    append_json_array(text, dump.exited, append_exited_json);
  }
  out << text << '\n';
}

}  // namespace stepscope
