// Why a job hangs, from dumps of its nodes taken while it hangs
// (`report DUMP.json...`, docs/jobs.md "Hangs"): which collective the ranks
// wait in, which ranks never entered it, and where those are instead.
//
// With torch's Flight Recorder (ranks launched under `record`), a process
// group's collective #N is stuck when a rank has enqueued it and not finished
// it; the ranks of the group that never enqueued it are missing. Without it,
// the stacks tell: a rank whose main thread is inside a torch.distributed call
// (or idle in backward, where DDP all-reduces gradients) waits in a
// collective; one elsewhere while others wait is missing. Ranks that exited
// (the hooks' exit notes) and ranks in none of the dumps are missing too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyses/diagnosis/diagnosis.hpp"
#include "run/dump.hpp"

namespace stepscope {

enum class RankWhere { kInCollective, kElsewhere, kExited, kAbsent };

struct CollectiveRef {
  std::string name;  // "gloo:all_reduce"; from stacks, the torch.distributed call: "all_reduce"
  int64_t seq = -1;  // the group's sequence number; -1 when only the stacks tell
  std::string process_group;  // torch's id of the group ("0": the default); empty from stacks
  std::string group_name;     // "default_pg", ...
};

struct RankPlace {
  int64_t rank = 0;
  std::string host, source;  // source: the dump's file
  pid_t pid = 0;
  RankWhere where = RankWhere::kAbsent;
  std::optional<CollectiveRef> collective;  // the one it waits in
  std::vector<SnapshotFrame> frames;        // its main thread's innermost frames
  ThreadState state = ThreadState::kUnknown;
  bool flight_recorder = false;             // its place comes from the Flight Recorder
  std::optional<int64_t> exit_status;
  std::string exception;
};

struct HangFinding {
  Finding finding;  // id collective_hang
  CollectiveRef collective;
  std::vector<int64_t> entered_ranks, missing_ranks;
  // Ranks in none of the inputs: whether they entered is not known.
  std::vector<int64_t> unknown_ranks;
};

struct HangAnalysis {
  std::vector<std::string> inputs;
  std::string job;
  int64_t world_size = 0;
  std::string source;  // "flight_recorder" or "stacks"
  std::vector<RankPlace> ranks;  // by rank
  std::vector<HangFinding> hangs;  // best first; the verdict is the first
  Diagnosis diagnosis;  // the hangs' findings, or a note saying why there is none
  std::vector<std::string> warnings;
};

// Throws InputError for dumps of different jobs, or a rank in two dumps.
HangAnalysis analyse_hang(const std::vector<Dump>& dumps);

// A run of a node whose recording has ended: every rank it recorded has
// exited, with the status and exception the hooks noted (a rank that died).
// `report DUMP... RUN...` puts it beside the dumps of the nodes still hung.
Dump exits_of_run(const Run& run, const std::string& source);

// Whether `dump` holds every rank of its job (running or exited), so that
// `dump` can give the verdict itself.
bool holds_whole_job(const Dump& dump);

// "exited with status 1 (ValueError: ...)", or "exited" when nothing more is known.
std::string exit_text(const RankPlace& place);

// "wait_for_lock (hung_job.py:33) <- train (hung_job.py:47)": a rank's place
// in words, innermost first.
std::string describe_frames(const std::vector<SnapshotFrame>& frames, size_t count = 3);

}  // namespace stepscope
