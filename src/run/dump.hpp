// A dump: the Python stacks of a process tree at one moment (`stepscope
// dump`), with what each process knows of the job it belongs to (rank, world
// size) and, where the hooks could ask for it, torch's Flight Recorder. The
// file format is stepscope.dump/1 (docs/dump-format.md); `report DUMP...`
// reads dumps of every node of a job and explains a hang (docs/jobs.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

inline constexpr const char* kDumpFormat = "stepscope.dump/1";

struct SnapshotFrame {
  std::string function;
  std::string file;  // a native frame's library
  int line = 0;
  FrameKind kind = FrameKind::kPython;  // native and marker frames with `dump --native`
};

struct ThreadSnapshot {
  int64_t tid = -1;  // the kernel's thread id, -1 when unknown
  uint64_t python_thread_id = 0;
  std::string name;  // /proc/PID/task/TID/comm
  ThreadState state = ThreadState::kUnknown;
  bool holds_gil = false;
  std::vector<SnapshotFrame> frames;  // innermost first
};

// One collective as torch's Flight Recorder keeps it.
struct FlightEntry {
  std::string process_group;  // the group's id in torch: "0" is the default group
  std::string group_name;     // its description: "default_pg", or the user's
  int64_t collective_seq = 0;  // 1, 2, ... per group (0 for point-to-point)
  std::string profiling_name;  // "gloo:all_reduce", "nccl:broadcast"
  std::string state;           // "scheduled", "started", "completed"
  bool retired = false;
  std::vector<std::vector<int64_t>> input_sizes;
};

// Where one process group stands on one rank.
struct FlightGroupStatus {
  int64_t last_enqueued = -1;
  int64_t last_started = -1;
  int64_t last_completed = -1;
};

struct FlightRecorder {
  std::string json;  // torch's own dump, as it gave it (well-formed JSON, checked)
  std::string version;
  std::vector<FlightEntry> entries;  // oldest first
  std::map<std::string, FlightGroupStatus> groups;  // by process group id
  std::map<std::string, std::vector<int64_t>> group_ranks;  // by group id, where torch names them
};

struct ProcessSnapshot {
  pid_t pid = 0;
  std::string command;
  std::string python_version, image;  // empty when not Python
  std::string problem;  // why it is not Python, or why its stacks are missing
  // From the environment its launcher gave it (RANK, LOCAL_RANK, WORLD_SIZE).
  std::optional<int64_t> rank, local_rank, world_size;
  // The job it belongs to: SLURM_JOB_ID, torchrun's run id, or its
  // rendezvous address (MASTER_ADDR:MASTER_PORT); empty when none is known.
  std::string job;
  std::optional<FlightRecorder> flight_recorder;
  std::string flight_recorder_problem;  // why a rank has none
  std::vector<ThreadSnapshot> threads;
};

// A rank of the tree that had exited when the dump was taken, from the note
// the hooks leave (python/stepscope/_flight.py).
struct ExitedRank {
  pid_t pid = 0;
  std::optional<int64_t> rank, world_size;
  std::optional<int64_t> status;  // 1 for an uncaught exception; unknown otherwise
  std::string exception;          // "ValueError: ..." or empty
};

struct Dump {
  std::string source;  // the file it was read from; empty when taken here
  std::string host;
  int64_t time_unix_ns = 0;
  pid_t root_pid = 0;
  std::vector<ProcessSnapshot> processes;
  std::vector<ExitedRank> exited;
};

}  // namespace stepscope
