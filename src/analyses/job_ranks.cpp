#include "analyses/job_ranks.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "analyses/ranks.hpp"
#include "analyses/steps/stragglers.hpp"

namespace stepscope {

namespace {

std::optional<size_t> find_slowest(const std::vector<JobRank>& ranks) {
  if (ranks.size() < 2) return std::nullopt;
  size_t slowest = 0;
  for (size_t i = 1; i < ranks.size(); ++i) {
    if (ranks[i].steps.step_time.mean_ms > ranks[slowest].steps.step_time.mean_ms) slowest = i;
  }
  return slowest;
}

std::vector<size_t> find_slow(const std::vector<JobRank>& ranks) {
  std::vector<std::optional<double>> means;
  for (const JobRank& r : ranks) means.emplace_back(r.steps.step_time.mean_ms);
  return find_stragglers(means).indexes;
}

void find_waited_for(JobRanks& job) {
  job.waited_for.clear();
  job.others_wait_fraction.reset();
  std::vector<size_t> known;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    if (job.ranks[i].steps.collective_wait_fraction) known.push_back(i);
  }
  if (known.size() < 2) return;
  auto wait_of = [&](size_t i) { return *job.ranks[i].steps.collective_wait_fraction; };
  double least = wait_of(known.front());
  for (size_t i : known) least = std::min(least, wait_of(i));
  for (size_t i : known) {
    std::vector<double> others;
    for (size_t j : known) {
      if (j != i) others.push_back(wait_of(j));
    }
    double others_wait = median_of(others);
    bool others_wait_clearly = others_wait >= kClearWait && others_wait - wait_of(i) >= kClearWait;
    if (others_wait_clearly && wait_of(i) <= least + kWaitTolerance && 2 * wait_of(i) <= others_wait) {
      job.waited_for.push_back(i);
    }
  }
  if (job.waited_for.empty()) return;
  double total = 0;
  const std::vector<size_t> waiting = job.waiting_ranks();
  for (size_t i : waiting) total += wait_of(i);
  if (!waiting.empty()) job.others_wait_fraction = total / static_cast<double>(waiting.size());
}

}  // namespace

bool JobRanks::is_waited_for(size_t i) const {
  return std::find(waited_for.begin(), waited_for.end(), i) != waited_for.end();
}

bool JobRanks::is_slow(size_t i) const { return std::find(slow.begin(), slow.end(), i) != slow.end(); }

std::vector<size_t> JobRanks::waiting_ranks() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].steps.collective_wait_fraction && !is_waited_for(i)) out.push_back(i);
  }
  return out;
}

std::vector<JobRank> job_ranks_of(const Run& run, const StepsAnalysis& steps, const std::string& source) {
  std::vector<JobRank> out;
  auto host = run.metadata.find("host");
  for (size_t i = 0; i < steps.processes.size(); ++i) {
    const ProcessSteps& p = steps.processes[i];
    JobRank& r = out.emplace_back();
    r.primary = i == steps.primary;
    r.source = source;
    r.host = host == run.metadata.end() ? "" : host->second;
    r.node_rank = run.metadata_int("node_rank");
    r.local_rank = process_number(run, p.pid, "local_rank");
    r.steps = p;
  }
  return out;
}

void add_job_ranks(JobRanks& job, std::vector<JobRank> ranks) {
  for (JobRank& r : ranks) job.ranks.push_back(std::move(r));
  std::stable_sort(job.ranks.begin(), job.ranks.end(), [](const JobRank& a, const JobRank& b) {
    if (a.steps.rank.has_value() != b.steps.rank.has_value()) return a.steps.rank.has_value();
    return a.steps.rank.value_or(0) < b.steps.rank.value_or(0);
  });
  job.slowest = find_slowest(job.ranks);
  job.slow = find_slow(job.ranks);
  find_waited_for(job);
}

std::string job_rank_label(const JobRank& rank) {
  std::string where;
  if (rank.node_rank) where = fmt::format("node {}", *rank.node_rank);
  if (!rank.host.empty()) where += (where.empty() ? "host " : ", host ") + rank.host;
  std::string who = rank.steps.rank ? fmt::format("rank {}", *rank.steps.rank) : fmt::format("pid {}", rank.steps.pid);
  return where.empty() ? who : fmt::format("{} ({})", who, where);
}

}  // namespace stepscope
