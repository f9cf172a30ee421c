// What `stepscope report` shows, gathered from the analyses. Renderers
// (renderers/report/: text, json, html) draw it; later analyses (steps, ops, gpu,
// diagnosis) add their results here.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "analyses/device/gpu.hpp"
#include "analyses/device/rank_comparison.hpp"
#include "analyses/diagnosis/diagnosis.hpp"
#include "analyses/function_costs.hpp"
#include "analyses/job_ranks.hpp"
#include "analyses/ops.hpp"
#include "analyses/process_summary.hpp"
#include "analyses/profile.hpp"
#include "analyses/side_by_side.hpp"
#include "analyses/steps/steps.hpp"

namespace stepscope {

// The hottest functions of a recording's steady steps: the time between
// the first steady step's start and the last step's end of the main training
// process (steps.primary), every process's samples in it, so start-up (a
// torch import takes seconds) and warm-up do not crowd the steps out.
struct StepFunctions {
  int64_t pid = 0;
  size_t steps = 0;
  int64_t from_ns = 0, to_ns = 0;
  FunctionCosts costs;
};

struct Report {
  const Run* run = nullptr;
  std::string source;  // the file the run came from
  ProfileSource profile_source = ProfileSource::kEmpty;
  bool includes_idle = false;
  std::vector<ProcessSummary> processes;
  FunctionCosts functions;
  std::optional<StepFunctions> step_functions;  // a sampled run with steady steps
  StepsAnalysis steps;
  JobRanks job;  // the processes with steps of every run or trace, side by side
  OpsAnalysis ops;
  GpuAnalysis gpu;  // one rank per trace; the first is `run`
  std::optional<RankComparison> rank_comparison;  // with several ranks
  Diagnosis diagnosis;  // findings, best first; with several ranks, merged over them
  std::vector<RankDiagnosis> rank_diagnoses;  // each rank's own, in input order
};

// The analyses run side by side on up to `threads` threads (docs/report.md,
// "Threads"); the report is the same whatever the number.
Report build_report(const Run& run, const std::string& source, const ProfileOptions& options,
                    const OpsOptions& ops_options = {}, size_t threads = analysis_threads());

// What a report keeps of another rank of the same job: its device analyses
// and its diagnosis, computed from its Run, which may be freed afterwards.
struct RankAnalyses {
  GpuRank gpu;
  RankDiagnosis diagnosis;
  std::vector<JobRank> ranks;  // its processes with steps
};
RankAnalyses analyze_rank(const Run& run, const std::string& source, size_t threads = analysis_threads());

// Adds another rank's analyses, compares the ranks, and merges the ranks'
// findings into the report's diagnosis, with the ranks the others wait for.
void add_rank(Report& report, RankAnalyses rank);
void add_rank(Report& report, const Run& run, const std::string& source);

using OpenRank = std::function<Run(const std::string&)>;

// Ranks read side by side at most, however many cores: each holds its Run
// in memory, so that a job of many large runs stays within memory.
inline constexpr size_t kMostRanksAtOnce = 4;

// How many other ranks to read at once beside the first, when the first
// takes `first` bytes of memory, each other rank `others` (the most of them
// counted for each), and `headroom` is what the process can still have:
// those that fit, at least one, at most `most`.
size_t ranks_that_fit(uint64_t headroom, uint64_t first, const std::vector<uint64_t>& others, size_t most);

// Opens and analyzes the other ranks (`sources`, in order) side by side,
// each on its own thread while `threads` allow, `at_once` at most (the
// caller's bound from memory); returns their analyses in input order. At
// most that many of their Runs are in memory at once. An error opening one
// is the first failing source's, as one after another would give. Once
// `stop` is set (by a caller whose own work failed), the sources not yet
// opened are skipped and nothing is returned.
std::vector<RankAnalyses> analyze_ranks(const std::vector<std::string>& sources, const OpenRank& open_rank,
                                        size_t threads = analysis_threads(), size_t at_once = kMostRanksAtOnce,
                                        const std::atomic<bool>* stop = nullptr);

// Adds the other ranks' analyses in order, then compares the ranks and merges
// their findings once, as add_rank one at a time would leave them. Then the
// rank the others wait for, when it is not its run's primary, gets its own
// findings: its run (the report's first included) is opened again.
void add_ranks(Report& report, std::vector<RankAnalyses> ranks, const OpenRank& open_rank,
               size_t threads = analysis_threads());
// The other ranks of a job analyzed (analyze_ranks) on a thread of their own
// while the caller builds the first rank's report: reading the first run
// takes one core, and a job's time is then its CPU's over every core.
// Destroyed untaken (the caller's own work failed), it skips the sources not
// yet opened and waits for those being read.
class BackgroundRanks {
 public:
  BackgroundRanks(std::vector<std::string> sources, OpenRank open_rank, size_t at_once = kMostRanksAtOnce,
                  size_t threads = analysis_threads());
  ~BackgroundRanks();
  BackgroundRanks(const BackgroundRanks&) = delete;
  BackgroundRanks& operator=(const BackgroundRanks&) = delete;

  // Waits for them; rethrows the first failing source's error.
  std::vector<RankAnalyses> take();

 private:
  std::vector<std::string> sources_;
  OpenRank open_rank_;
  std::atomic<bool> stop_ = false;
  std::future<std::vector<RankAnalyses>> analyses_;
};

// Both: the other ranks analyzed, then added.
void add_ranks(Report& report, const std::vector<std::string>& sources, const OpenRank& open_rank,
               size_t threads = analysis_threads());

}  // namespace stepscope
