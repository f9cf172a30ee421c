#include "analyses/collective_hang.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analyses/ranks.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr size_t kFramesKept = 6;
constexpr size_t kRanksDescribed = 8;  // missing ranks with a sentence each

bool is_file(std::string_view file, std::string_view tail) {
  return file.size() >= tail.size() && file.substr(file.size() - tail.size()) == tail &&
         (file.size() == tail.size() || file[file.size() - tail.size() - 1] == '/');
}

const ThreadSnapshot* main_thread(const ProcessSnapshot& process) {
  for (const ThreadSnapshot& thread : process.threads) {
    if (thread.tid == process.pid) return &thread;
  }
  return process.threads.empty() ? nullptr : &process.threads.front();
}

CollectiveRef named_collective(std::string name) {
  CollectiveRef ref;
  ref.name = std::move(name);
  return ref;
}

// The torch.distributed call the thread is in (the outermost, the one user
// code made), or backward while idle: DDP all-reduces gradients there.
std::optional<CollectiveRef> collective_in_stack(const ThreadSnapshot& thread) {
  const SnapshotFrame* call = nullptr;
  for (const SnapshotFrame& frame : thread.frames) {
    if (is_file(frame.file, "torch/distributed/distributed_c10d.py")) call = &frame;
  }
  if (call) return named_collective(call->function);
  if (thread.state != ThreadState::kIdle) return std::nullopt;
  for (const SnapshotFrame& frame : thread.frames) {
    if ((is_file(frame.file, "torch/autograd/graph.py") && frame.function == "_engine_run_backward") ||
        (is_file(frame.file, "torch/autograd/__init__.py") && frame.function == "backward")) {
      return named_collective("backward");
    }
  }
  return std::nullopt;
}

// The first collective of a group the rank enqueued and has not finished.
std::optional<CollectiveRef> pending_in(const FlightRecorder& recorder, const std::string& group) {
  auto status = recorder.groups.find(group);
  if (status == recorder.groups.end()) return std::nullopt;
  int64_t completed = std::max<int64_t>(status->second.last_completed, 0);
  if (status->second.last_enqueued <= completed) return std::nullopt;
  CollectiveRef ref;
  ref.seq = completed + 1;
  ref.process_group = group;
  for (const FlightEntry& entry : recorder.entries) {
    if (entry.process_group == group && entry.collective_seq == ref.seq) {
      ref.name = entry.profiling_name;
      ref.group_name = entry.group_name;
    }
  }
  if (ref.name.empty()) ref.name = "collective";
  return ref;
}

std::optional<CollectiveRef> first_pending(const FlightRecorder& recorder) {
  for (const auto& [group, status] : recorder.groups) {
    if (auto ref = pending_in(recorder, group)) return ref;
  }
  return std::nullopt;
}

std::string label(const CollectiveRef& ref) {
  if (ref.seq < 0) return ref.name == "backward" ? "backward (DDP's gradient all-reduce)" : ref.name;
  std::string group = ref.group_name.empty() ? "" : fmt::format(" ({})", ref.group_name);
  return fmt::format("{} #{} of process group {}{}", ref.name, ref.seq, ref.process_group, group);
}

bool same_collective(const CollectiveRef& a, const CollectiveRef& b) {
  return a.seq < 0 || b.seq < 0 ? a.name == b.name : a.process_group == b.process_group && a.seq == b.seq;
}

// "0-3, 6" for ranks 0, 1, 2, 3 and 6.
std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i + 1 ? fmt::format("{}-{}", ranks[i], ranks[j])
                     : (j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j]) : std::to_string(ranks[i]));
    i = j + 1;
  }
  return out;
}

std::string ranks_word(const std::vector<int64_t>& ranks, bool capital = true) {
  std::string word = ranks.size() == 1 ? "rank" : "ranks";
  if (capital) word[0] = 'R';
  return fmt::format("{} {}", word, rank_list(ranks));
}

class HangBuilder {
 public:
  explicit HangBuilder(const std::vector<Dump>& dumps) : dumps_(dumps) {}

  HangAnalysis build() {
    for (const Dump& dump : dumps_) analysis_.inputs.push_back(dump.source.empty() ? dump.host : dump.source);
    gather_ranks();
    if (analysis_.ranks.empty()) {
      analysis_.diagnosis.note =
          "No process of the dumps says which rank it is (RANK in its environment, as torchrun and SLURM "
          "launchers set it): nothing to tell about a collective.";
      return std::move(analysis_);
    }
    analysis_.source = any_flight_recorder() ? "flight_recorder" : "stacks";
    if (analysis_.source == "flight_recorder") {
      find_flight_recorder_hangs();
    } else {
      find_stack_hangs();
    }
    order_and_describe();
    return std::move(analysis_);
  }

 private:
  void gather_ranks() {
    std::map<int64_t, std::string> seen_in;
    for (const Dump& dump : dumps_) {
      const std::string& where = analysis_.inputs[static_cast<size_t>(&dump - dumps_.data())];
      bool has_rank = false;
      for (const ProcessSnapshot& process : dump.processes) {
        if (!process.rank) continue;
        has_rank = true;
        check_job(process.job, where);
        claim(*process.rank, where, seen_in);
        analysis_.world_size = std::max(analysis_.world_size, process.world_size.value_or(*process.rank + 1));
        places_[*process.rank] = place_of(process, dump, where);
        processes_[*process.rank] = &process;
      }
      for (const ExitedRank& exited : dump.exited) {
        if (!exited.rank || places_.count(*exited.rank)) continue;
        has_rank = true;
        analysis_.world_size = std::max(analysis_.world_size, exited.world_size.value_or(*exited.rank + 1));
        RankPlace& place = places_[*exited.rank] = rank_at(*exited.rank, RankWhere::kExited, dump, where);
        place.pid = exited.pid;
        place.exit_status = exited.status;
        place.exception = exited.exception;
      }
      if (!has_rank) analysis_.warnings.push_back(fmt::format("{}: no process of it is a rank of a job", where));
    }
    if (places_.empty()) return;
    for (int64_t rank = 0; rank < analysis_.world_size; ++rank) {
      if (!places_.count(rank)) places_[rank] = rank_at(rank, RankWhere::kAbsent, Dump{}, "");
    }
    for (auto& [rank, place] : places_) analysis_.ranks.push_back(place);
  }

  void check_job(const std::string& job, const std::string& where) {
    if (job.empty()) return;
    if (analysis_.job.empty()) {
      analysis_.job = job;
      job_source_ = where;
    } else if (job != analysis_.job) {
      throw InputError(fmt::format("dumps of different jobs: {} is of job {}, {} of job {}", job_source_,
                                   analysis_.job, where, job));
    }
  }

  static void claim(int64_t rank, const std::string& where, std::map<int64_t, std::string>& seen_in) {
    auto [at, fresh] = seen_in.emplace(rank, where);
    if (!fresh) {
      throw InputError(fmt::format("rank {} is in {} and in {}: dumps of one job, one per node, please", rank,
                                   at->second, where));
    }
  }

  static RankPlace rank_at(int64_t rank, RankWhere where, const Dump& dump, const std::string& source) {
    RankPlace place;
    place.rank = rank;
    place.where = where;
    place.host = dump.host;
    place.source = source;
    return place;
  }

  static RankPlace place_of(const ProcessSnapshot& process, const Dump& dump, const std::string& source) {
    RankPlace place = rank_at(*process.rank, RankWhere::kElsewhere, dump, source);
    place.pid = process.pid;
    if (const ThreadSnapshot* thread = main_thread(process)) {
      place.state = thread->state;
      size_t kept = std::min(thread->frames.size(), kFramesKept);
      place.frames.assign(thread->frames.begin(), thread->frames.begin() + static_cast<ptrdiff_t>(kept));
      place.collective = collective_in_stack(*thread);
    }
    if (process.flight_recorder) {
      place.flight_recorder = true;
      place.collective = first_pending(*process.flight_recorder);
    }
    if (place.collective) place.where = RankWhere::kInCollective;
    return place;
  }

  bool any_flight_recorder() const {
    return std::any_of(analysis_.ranks.begin(), analysis_.ranks.end(),
                       [](const RankPlace& place) { return place.flight_recorder; });
  }

  RankPlace& place(int64_t rank) { return analysis_.ranks[static_cast<size_t>(rank)]; }

  // Each group with a collective some rank enqueued and did not finish: its
  // members that did not enqueue it are missing.
  void find_flight_recorder_hangs() {
    std::set<std::string> groups;
    for (const auto& [rank, process] : processes_) {
      if (!process->flight_recorder) continue;
      for (const auto& [group, status] : process->flight_recorder->groups) groups.insert(group);
    }
    for (const std::string& group : groups) {
      std::vector<int64_t> members = members_of(group);
      std::optional<CollectiveRef> stuck;
      for (int64_t rank : members) {
        const ProcessSnapshot* process = process_of(rank);
        if (!process || !process->flight_recorder) continue;
        auto pending = pending_in(*process->flight_recorder, group);
        if (pending && (!stuck || pending->seq < stuck->seq)) stuck = pending;
      }
      if (stuck) add_flight_recorder_hang(*stuck, members);
    }
  }

  void add_flight_recorder_hang(const CollectiveRef& stuck, const std::vector<int64_t>& members) {
    HangFinding hang;
    hang.collective = stuck;
    for (int64_t rank : members) {
      const ProcessSnapshot* process = process_of(rank);
      bool entered = false;
      if (process && process->flight_recorder) {
        auto status = process->flight_recorder->groups.find(stuck.process_group);
        entered = status != process->flight_recorder->groups.end() && status->second.last_enqueued >= stuck.seq;
      } else if (rank < static_cast<int64_t>(analysis_.ranks.size())) {
        entered = place(rank).where == RankWhere::kInCollective;  // its stacks only
      }
      classify_rank(hang, rank, entered);
    }
    analysis_.hangs.push_back(std::move(hang));
  }

  void classify_rank(HangFinding& hang, int64_t rank, bool entered) {
    bool seen = rank < static_cast<int64_t>(analysis_.ranks.size()) && place(rank).where != RankWhere::kAbsent;
    (entered ? hang.entered_ranks : seen ? hang.missing_ranks : hang.unknown_ranks).push_back(rank);
  }

  std::vector<int64_t> members_of(const std::string& group) const {
    for (const auto& [rank, process] : processes_) {
      if (!process->flight_recorder) continue;
      auto ranks = process->flight_recorder->group_ranks.find(group);
      if (ranks != process->flight_recorder->group_ranks.end() && !ranks->second.empty()) return ranks->second;
    }
    std::vector<int64_t> all;
    for (const RankPlace& place : analysis_.ranks) all.push_back(place.rank);
    return all;
  }

  const ProcessSnapshot* process_of(int64_t rank) const {
    auto found = processes_.find(rank);
    return found == processes_.end() ? nullptr : found->second;
  }

  // Without the Flight Recorder: the ranks in each torch.distributed call
  // the stacks show, against every other rank.
  void find_stack_hangs() {
    for (const RankPlace& waiting : analysis_.ranks) {
      if (!waiting.collective) continue;
      bool known = std::any_of(analysis_.hangs.begin(), analysis_.hangs.end(), [&](const HangFinding& hang) {
        return same_collective(hang.collective, *waiting.collective);
      });
      if (known) continue;
      HangFinding hang;
      hang.collective = *waiting.collective;
      for (const RankPlace& other : analysis_.ranks) {
        classify_rank(hang, other.rank, other.collective && same_collective(*other.collective, *waiting.collective));
      }
      analysis_.hangs.push_back(std::move(hang));
    }
  }

  // A hang whose missing ranks wait in no other collective comes first: it
  // is where the job stopped; the others follow from it.
  void order_and_describe() {
    for (const RankPlace& place : analysis_.ranks) {
      if (place.where == RankWhere::kAbsent) {
        analysis_.warnings.push_back(fmt::format("rank {} is in none of the inputs", place.rank));
      }
    }
    auto waits_elsewhere = [&](const HangFinding& hang) {
      return std::all_of(hang.missing_ranks.begin(), hang.missing_ranks.end(),
                         [&](int64_t rank) { return place(rank).where == RankWhere::kInCollective; });
    };
    std::stable_sort(analysis_.hangs.begin(), analysis_.hangs.end(), [&](const HangFinding& a, const HangFinding& b) {
      return !waits_elsewhere(a) && waits_elsewhere(b);
    });
    for (HangFinding& hang : analysis_.hangs) {
      hang.finding = finding_for(hang);
      analysis_.diagnosis.findings.push_back(hang.finding);
    }
    if (analysis_.hangs.empty()) {
      analysis_.diagnosis.note = fmt::format(
          "No rank waits in a collective{}: the job is not hung in one (it may be busy between them, or stuck "
          "before its process group exists).",
          analysis_.source == "stacks" ? " its stacks show" : "");
    }
  }

  Finding finding_for(const HangFinding& hang) {
    Finding finding;
    finding.id = "collective_hang";
    finding.severity = Severity::kHigh;
    finding.impact = "the job cannot go on";
    std::string what = label(hang.collective);
    if (hang.missing_ranks.empty() && !hang.unknown_ranks.empty()) {
      bool one = hang.unknown_ranks.size() == 1;
      finding.title = fmt::format("{} {} in {}; {} {} in none of the inputs (dump {} to see whether {} entered)",
                                  ranks_word(hang.entered_ranks), hang.entered_ranks.size() == 1 ? "waits" : "wait",
                                  what, ranks_word(hang.unknown_ranks, false), one ? "is" : "are",
                                  one ? "its node" : "their nodes", one ? "it" : "they");
    } else if (hang.missing_ranks.empty()) {
      finding.title = fmt::format("Every rank waits in {}; none is missing", what);
    } else {
      std::string waiting = hang.entered_ranks.empty() ? "no rank waits"
                            : fmt::format("{} {}", ranks_word(hang.entered_ranks, false),
                                          hang.entered_ranks.size() == 1 ? "waits" : "wait");
      finding.title = fmt::format("{} never entered {}; {} in it", ranks_word(hang.missing_ranks), what, waiting);
    }
    finding.evidence.push_back(entered_evidence(hang, what));
    size_t described = 0;
    bool mismatch = false;
    std::vector<int64_t> not_in = hang.missing_ranks;
    not_in.insert(not_in.end(), hang.unknown_ranks.begin(), hang.unknown_ranks.end());
    for (int64_t rank : not_in) {
      const RankPlace& missing = place(rank);
      mismatch = mismatch || missing.where == RankWhere::kInCollective;
      if (described++ < kRanksDescribed) finding.evidence.push_back(missing_evidence(missing));
    }
    if (described > kRanksDescribed) {
      finding.evidence.push_back(fmt::format("... and {} more missing ranks.", described - kRanksDescribed));
    }
    if (mismatch) {
      finding.evidence.push_back(
          "The ranks called collectives in a different order (or on different groups): each waits for another.");
    }
    finding.recommendation = recommendation_for(hang, mismatch);
    return finding;
  }

  std::string entered_evidence(const HangFinding& hang, const std::string& what) {
    if (hang.entered_ranks.empty()) return fmt::format("No rank entered {}.", what);
    bool one = hang.entered_ranks.size() == 1;
    std::string how = hang.collective.seq >= 0 ? "the Flight Recorder has it enqueued and not completed"
                                               : (one ? "its stack is in it" : "their stacks are in it");
    if (hang.collective.name == "backward") {
      how = one ? "its main thread is idle in backward" : "their main threads are idle in backward";
    }
    return fmt::format("{} entered {} ({}).", ranks_word(hang.entered_ranks), what, how);
  }

  static std::string missing_evidence(const RankPlace& missing) {
    std::string who = missing.pid > 0 ? fmt::format("Rank {} ({}, pid {})", missing.rank,
                                                    missing.host.empty() ? "?" : missing.host, missing.pid)
                                      : fmt::format("Rank {}", missing.rank);
    switch (missing.where) {
      case RankWhere::kInCollective:
        return fmt::format("{} waits in {} instead.", who, label(*missing.collective));
      case RankWhere::kElsewhere:
        return fmt::format("{} is instead in {}, {}.", who, describe_frames(missing.frames),
                           thread_state_name(missing.state));
      case RankWhere::kExited:
        return fmt::format("{} {}.", who, exit_text(missing));
      case RankWhere::kAbsent:
        break;
    }
    return fmt::format("{} is in none of the inputs: dump its node too (or give the run of its node, if it ended).",
                       who);
  }

  std::string recommendation_for(const HangFinding& hang, bool mismatch) {
    if (hang.missing_ranks.empty() && !hang.unknown_ranks.empty()) {
      return "Dump every node of the job (stepscope dump --pid PID --json -o DUMP.json on each) and report "
             "them together, to see where the other ranks are.";
    }
    if (hang.missing_ranks.empty()) {
      return "No rank is missing, so the collective itself does not finish: look below Python (a broken link, "
             "a device fault; NCCL_DEBUG=INFO, the network and the devices' logs).";
    }
    const RankPlace& first = place(hang.missing_ranks.front());
    if (mismatch) {
      return "Make every rank call the same collectives in the same order on the same groups; the missing "
             "ranks' own collectives above show where the order differs.";
    }
    if (first.where == RankWhere::kExited) {
      return fmt::format("Read rank {}'s own error first: the others wait for a rank that is gone. A "
                         "process-group timeout (init_process_group(timeout=...)) makes them fail instead of "
                         "hang.", first.rank);
    }
    return fmt::format("Find why rank {} does not reach the collective: its stack above shows where it waits "
                       "(a lock, I/O, a data loader, a condition only some ranks meet). A process-group timeout "
                       "(init_process_group(timeout=...)) turns such a hang into an error naming the collective.",
                       first.rank);
  }

  const std::vector<Dump>& dumps_;
  HangAnalysis analysis_;
  std::map<int64_t, RankPlace> places_;
  std::map<int64_t, const ProcessSnapshot*> processes_;
  std::string job_source_;
};

}  // namespace

HangAnalysis analyse_hang(const std::vector<Dump>& dumps) { return HangBuilder(dumps).build(); }

Dump exits_of_run(const Run& run, const std::string& source) {
  Dump dump;
  dump.source = source;
  if (auto host = run.metadata.find("host"); host != run.metadata.end()) dump.host = host->second;
  for (const Process& process : run.processes) {
    auto rank = process_rank(run, process.pid);
    if (!rank) continue;
    ExitedRank& exited = dump.exited.emplace_back();
    exited.pid = static_cast<pid_t>(process.pid);
    exited.rank = rank;
    exited.world_size = process_number(run, process.pid, "world_size");
    exited.status = process_number(run, process.pid, "exit_status");
    exited.exception = process_fact(run, process.pid, "exception").value_or("");
  }
  return dump;
}

bool holds_whole_job(const Dump& dump) {
  std::set<int64_t> ranks;
  int64_t world_size = 0;
  for (const ProcessSnapshot& process : dump.processes) {
    if (!process.rank) continue;
    ranks.insert(*process.rank);
    world_size = std::max(world_size, process.world_size.value_or(0));
  }
  for (const ExitedRank& exited : dump.exited) {
    if (exited.rank) ranks.insert(*exited.rank);
  }
  return world_size > 0 && static_cast<int64_t>(ranks.size()) == world_size &&
         *ranks.rbegin() == world_size - 1;
}

std::string exit_text(const RankPlace& place) {
  std::string text = "exited";
  if (place.exit_status) text += fmt::format(" with status {}", *place.exit_status);
  if (!place.exception.empty()) text += fmt::format(" ({})", place.exception);
  return text;
}

std::string describe_frames(const std::vector<SnapshotFrame>& frames, size_t count) {
  if (frames.empty()) return "no Python frame";
  std::string out;
  for (size_t i = 0; i < frames.size() && i < count; ++i) {
    if (i > 0) out += " <- ";
    std::string_view file = frames[i].file;
    size_t slash = file.rfind('/');
    if (slash != std::string_view::npos) file.remove_prefix(slash + 1);
    out += fmt::format("{} ({}:{})", frames[i].function, file, frames[i].line);
  }
  return out;
}

}  // namespace stepscope
