#include "importers/dump_file.hpp"

#include <fstream>

#include <fmt/format.h>
#include <simdjson.h>

#include "importers/dom_fields.hpp"
#include "importers/flight_recorder.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

using simdjson::dom::element;

constexpr std::string_view kFormatPrefix = "stepscope.dump/";

ThreadSnapshot thread_from(element object) {
  ThreadSnapshot thread;
  thread.tid = integer_field(object, "tid").value_or(-1);
  thread.name = text_field(object, "name");
  thread.state = thread_state_from_name(text_field(object, "state"));
  bool holds_gil = false;
  if (object["holds_gil"].get_bool().get(holds_gil) == simdjson::SUCCESS) thread.holds_gil = holds_gil;
  simdjson::dom::array frames;
  if (object["frames"].get_array().get(frames) != simdjson::SUCCESS) return thread;
  for (element frame : frames) {
    // Frames without a kind are Python's: dumps written before `dump --native` have none.
    const FrameKind kind = frame_kind_from_name(text_field(frame, "kind")).value_or(FrameKind::kPython);
    thread.frames.push_back({text_field(frame, "function"), text_field(frame, "file"),
                             static_cast<int>(integer_field(frame, "line").value_or(0)), kind});
  }
  return thread;
}

ProcessSnapshot process_from(element object, const std::string& where) {
  ProcessSnapshot process;
  auto pid = integer_field(object, "pid");
  if (!pid) throw InputError(fmt::format("{}: a process without a pid", where));
  process.pid = static_cast<pid_t>(*pid);
  process.command = text_field(object, "command");
  element python;
  if (object["python"].get(python) == simdjson::SUCCESS && python.is_object()) {
    process.python_version = text_field(python, "version");
    process.image = text_field(python, "path");
  }
  process.problem = text_field(object, "problem");
  process.rank = integer_field(object, "rank");
  process.local_rank = integer_field(object, "local_rank");
  process.world_size = integer_field(object, "world_size");
  process.job = text_field(object, "job");
  simdjson::dom::array threads;
  if (object["threads"].get_array().get(threads) == simdjson::SUCCESS) {
    for (element thread : threads) process.threads.push_back(thread_from(thread));
  }
  element recorder;
  if (object["flight_recorder"].get(recorder) == simdjson::SUCCESS && recorder.is_object()) {
    process.flight_recorder =
        flight_recorder_from(recorder, fmt::format("{}: the Flight Recorder of pid {}", where, process.pid));
  }
  process.flight_recorder_problem = text_field(object, "flight_recorder_problem");
  return process;
}

}  // namespace

ExitedRank exited_rank_from(element object) {
  ExitedRank exited;
  exited.pid = static_cast<pid_t>(integer_field(object, "pid").value_or(0));
  exited.rank = integer_field(object, "rank");
  exited.world_size = integer_field(object, "world_size");
  exited.status = integer_field(object, "status");
  exited.exception = text_field(object, "exception");
  return exited;
}

bool is_dump_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof(head) - 1);
  std::string_view text(head, static_cast<size_t>(in.gcount()));
  size_t start = text.find_first_not_of(" \t\r\n");
  return start != std::string_view::npos && text.substr(start).rfind("{\"format\":\"stepscope.dump/", 0) == 0;
}

Dump read_dump_file(const std::string& path) {
  simdjson::padded_string text;
  if (auto error = simdjson::padded_string::load(path).get(text)) {
    throw InputError(fmt::format("{}: cannot read it: {}", path, simdjson::error_message(error)));
  }
  simdjson::dom::parser parser;
  element document;
  if (auto error = parser.parse(text).get(document)) {
    throw InputError(fmt::format("{}: not a whole stepscope dump (cut short, or not JSON: {})", path,
                                 simdjson::error_message(error)));
  }
  std::string format = text_field(document, "format");
  if (format.rfind(kFormatPrefix, 0) != 0) throw InputError(fmt::format("{}: not a stepscope dump", path));
  if (format != kDumpFormat) {
    throw InputError(fmt::format("{}: dump format {}, this stepscope reads {}", path, format, kDumpFormat));
  }
  Dump dump;
  dump.source = path;
  dump.host = text_field(document, "host");
  dump.time_unix_ns = integer_field(document, "time_unix_ns").value_or(0);
  dump.root_pid = static_cast<pid_t>(integer_field(document, "root_pid").value_or(0));
  simdjson::dom::array processes, exited;
  if (document["processes"].get_array().get(processes) != simdjson::SUCCESS) {
    throw InputError(fmt::format("{}: a dump without its \"processes\" list", path));
  }
  for (element process : processes) dump.processes.push_back(process_from(process, path));
  if (document["exited"].get_array().get(exited) == simdjson::SUCCESS) {
    for (element note : exited) dump.exited.push_back(exited_rank_from(note));
  }
  return dump;
}

}  // namespace stepscope
