// rank_straggler: in synchronous data-parallel training the ranks wait for
// each other in every step's collectives, so one slow rank makes every rank
// slow, and the figures of the others show a wait, not its cause. The
// finding names the ranks the others wait for (job_ranks.hpp), how much of
// their steps the others wait, and what those ranks do instead: their own
// findings, which come first, since fixing them removes the others' wait.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "analyses/diagnosis/rank_straggler.hpp"

namespace stepscope {

namespace {

constexpr size_t kMostRanksListed = 8;

std::string percent(double share) { return fmt::format("{:.0f}%", 100 * share); }

std::string others_waits(const JobRanks& job) {
  const std::vector<size_t> others = job.waiting_ranks();
  std::string text;
  for (size_t n = 0; n < std::min(others.size(), kMostRanksListed); ++n) {
    const JobRank& rank = job.ranks[others[n]];
    text += fmt::format("{}{} {}", n ? ", " : "", job_rank_label(rank), percent(*rank.steps.collective_wait_fraction));
  }
  if (others.size() > kMostRanksListed) text += fmt::format(" and {} more", others.size() - kMostRanksListed);
  return fmt::format("{} other rank{}: {}", others.size(), others.size() == 1 ? "" : "s", text);
}

// The others' mean step and the time of it they wait.
std::string others_step(const JobRanks& job) {
  const std::vector<size_t> others = job.waiting_ranks();
  double step_ms = 0;
  for (size_t i : others) step_ms += job.ranks[i].steps.step_time.mean_ms;
  step_ms /= static_cast<double>(std::max<size_t>(others.size(), 1));
  return fmt::format("the others wait {:.1f} ms of a mean {:.1f} ms step in collectives (all-reduce in backward, "
                     "barriers), while the ranks they wait for wait least",
                     step_ms * *job.others_wait_fraction, step_ms);
}

std::string own_findings_line(const std::string& who, const Diagnosis* own) {
  if (!own) return fmt::format("what {} does instead is not known: no diagnosis of it alone", who);
  if (own->findings.empty()) return fmt::format("{}'s own diagnosis finds no known bottleneck: {}", who, own->note);
  std::string text;
  for (const Finding& f : own->findings) text += fmt::format("{}{} ({})", text.empty() ? "" : "; ", f.id, f.title);
  return fmt::format("what {} does instead, its own findings: {}", who, text);
}

Finding straggler_finding(const JobRanks& job) {
  const JobRank& first = job.ranks[job.waited_for.front()];
  std::string who;
  for (size_t i : job.waited_for) who += (who.empty() ? "" : ", ") + job_rank_label(job.ranks[i]);
  const std::string short_who = job_rank_label(first);
  const std::string title = fmt::format("The other ranks wait {} of their steps for {}",
                                        percent(*job.others_wait_fraction),
                                        job.waited_for.size() == 1 ? short_who : who);
  Finding f = time_finding("rank_straggler", *job.others_wait_fraction, title);
  for (size_t i : job.waited_for) {
    f.evidence.push_back(fmt::format("{} waits {} of its steps for the others", job_rank_label(job.ranks[i]),
                                     percent(*job.ranks[i].steps.collective_wait_fraction)));
  }
  f.evidence.push_back(others_waits(job));
  f.evidence.push_back(others_step(job));
  f.evidence.push_back(own_findings_line(short_who, first.own ? &*first.own : nullptr));
  f.recommendation = fmt::format(
      "Make {} as fast as the others: its own findings first (above), since every rank's step lasts as long as "
      "its. If its work is larger (uneven data shards, longer sequences: bucket by length or balance tokens per "
      "rank) or its machine slower (another GPU or CPU model, a throttled or shared node), even that out; the "
      "others' wait is gone only when no rank is behind.",
      who);
  return f;
}

// The findings of the rank waited for first, as its own: its figures, and
// its name in the title.
std::vector<Finding> own_findings_first(Diagnosis& diagnosis, const JobRank& rank, const Diagnosis& own) {
  std::vector<Finding> first;
  const std::string who =
      rank.steps.rank ? fmt::format("rank {}", *rank.steps.rank) : fmt::format("process {}", rank.steps.pid);
  for (const Finding& mine : own.findings) {
    auto merged = std::find_if(diagnosis.findings.begin(), diagnosis.findings.end(),
                               [&](const Finding& f) { return f.id == mine.id; });
    Finding f = mine;
    if (merged != diagnosis.findings.end()) {
      f.ranks = merged->ranks;
      if (!f.ranks.empty()) {
        f.evidence.insert(f.evidence.begin(), fmt::format("found on {} of the job's ranks; the figures below are of "
                                                          "{}, the rank the others wait for",
                                                          f.ranks.size(), who));
      }
      diagnosis.findings.erase(merged);
    }
    f.title = fmt::format("{}{}, the others wait for it. {}", static_cast<char>(std::toupper(who[0])), who.substr(1),
                          f.title);
    first.push_back(std::move(f));
  }
  return first;
}

}  // namespace

void diagnose_stragglers(Diagnosis& diagnosis, const JobRanks& job) {
  if (job.waited_for.empty() || !job.others_wait_fraction) return;
  Finding straggler = straggler_finding(job);
  std::vector<Finding> first;
  const JobRank& rank = job.ranks[job.waited_for.front()];
  if (rank.own) first = own_findings_first(diagnosis, rank, *rank.own);
  first.push_back(std::move(straggler));
  diagnosis.findings.insert(diagnosis.findings.begin(), std::make_move_iterator(first.begin()),
                            std::make_move_iterator(first.end()));
}

}  // namespace stepscope
