#include "analyses/flame_tree.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "analyses/recent_answers.hpp"
#include "analyses/spans/intervals.hpp"

namespace stepscope {

namespace {

std::optional<FlamePhase> phase_of(SpanKind kind) {
  switch (kind) {
    case SpanKind::kDataWait: return FlamePhase::kDataWait;
    case SpanKind::kForward: return FlamePhase::kForward;
    case SpanKind::kBackward: return FlamePhase::kBackward;
    case SpanKind::kOptimizer: return FlamePhase::kOptimizer;
    case SpanKind::kStep: return FlamePhase::kOther;  // a step's time no phase covers
    default: return std::nullopt;
  }
}

// The time of each phase in each process (the union over its threads), index
// by FlamePhase, kOther holding steps. A run's samples come in time order, so
// each process's finders walk on from their last answer (CoverFinder).
class ProcessPhases {
 public:
  explicit ProcessPhases(const Run& run) {
    for (const Span& s : run.spans) {
      if (auto phase = phase_of(s.kind)) {
        covered_[s.pid][static_cast<size_t>(*phase)].push_back({s.start_ns, s.end_ns});
      }
    }
    for (auto& [pid, phases] : covered_) {
      std::vector<CoverFinder>& finders = finders_[pid];
      for (Intervals& time : phases) {
        std::erase_if(time, [](const Interval& i) { return i.end_ns <= i.start_ns; });
        time = merge_unsorted(std::move(time));
        finders.emplace_back(time);  // covered_'s lists stay where they are from here on
      }
    }
  }
  // The finders point into covered_: a copy's would point into this one's.
  ProcessPhases(const ProcessPhases&) = delete;
  ProcessPhases& operator=(const ProcessPhases&) = delete;
  bool empty() const { return covered_.empty(); }

  FlamePhase at(int64_t pid, int64_t ts) {
    std::vector<CoverFinder>* finders = recent_finders_.get(pid, [this](int64_t p) {
      auto found = finders_.find(p);
      return found == finders_.end() ? nullptr : &found->second;
    });
    if (!finders) return FlamePhase::kOutside;
    // Named phases first, then the step that holds them.
    for (size_t p = 0; p <= static_cast<size_t>(FlamePhase::kOther); ++p) {
      if ((*finders)[p].covers(ts)) return static_cast<FlamePhase>(p);
    }
    return FlamePhase::kOutside;
  }

 private:
  std::map<int64_t, std::array<Intervals, kFlamePhaseCount>> covered_;
  std::map<int64_t, std::vector<CoverFinder>> finders_;  // one per list of covered_
  RecentAnswers<int64_t, std::vector<CoverFinder>*> recent_finders_;
};

// Builds one process's tree node by node; parents always precede children.
class ProcessTreeBuilder {
 public:
  explicit ProcessTreeBuilder(int64_t pid) { process_.pid = pid; process_.nodes.push_back({}); }

  void add(int64_t tid, const std::vector<FrameId>& frames_root_first, FlamePhase phase, int64_t ns) {
    auto p = static_cast<size_t>(phase);
    process_.nodes[0].total_ns[p] += ns;
    uint32_t node = thread_node(tid);
    process_.nodes[node].total_ns[p] += ns;
    for (FrameId frame : frames_root_first) {
      node = child(node, frame);
      process_.nodes[node].total_ns[p] += ns;
    }
  }

  FlameProcess finish(double min_fraction) && {
    int64_t threshold = static_cast<int64_t>(static_cast<double>(process_.total_ns()) * min_fraction);
    return prune(std::move(process_), threshold);
  }

 private:
  uint32_t thread_node(int64_t tid) {
    auto [found, inserted] = threads_.try_emplace(tid, static_cast<uint32_t>(process_.nodes.size()));
    if (inserted) process_.nodes.push_back({.parent = 0, .frame = 0, .tid = tid, .total_ns = {}});
    return found->second;
  }
  uint32_t child(uint32_t parent, FrameId frame) {
    uint64_t key = (uint64_t{parent} << 32) | frame;
    auto [found, inserted] = children_.try_emplace(key, static_cast<uint32_t>(process_.nodes.size()));
    if (inserted) process_.nodes.push_back({.parent = parent, .frame = frame, .tid = 0, .total_ns = {}});
    return found->second;
  }

  static int64_t sum(const FlameNode& node) {
    int64_t total = 0;
    for (int64_t ns : node.total_ns) total += ns;
    return total;
  }

  // Drops nodes lighter than `threshold`; a node is never heavier than its
  // parent, so the kept nodes' parents are kept too.
  static FlameProcess prune(FlameProcess process, int64_t threshold) {
    if (threshold <= 0) return process;
    FlameProcess kept{.pid = process.pid, .nodes = {}};
    std::vector<uint32_t> new_index(process.nodes.size(), UINT32_MAX);
    for (size_t i = 0; i < process.nodes.size(); ++i) {
      FlameNode node = process.nodes[i];
      bool keep = i == 0 || (sum(node) >= threshold && new_index[node.parent] != UINT32_MAX);
      if (!keep) continue;
      node.parent = i == 0 ? 0 : new_index[node.parent];
      new_index[i] = static_cast<uint32_t>(kept.nodes.size());
      kept.nodes.push_back(node);
    }
    return kept;
  }

  FlameProcess process_;
  std::map<int64_t, uint32_t> threads_;
  std::unordered_map<uint64_t, uint32_t> children_;  // (parent << 32 | frame) -> node
};

// Samples counted per (thread, stack, phase) first: a long run has millions
// of samples but few distinct stacks, and each stack is walked only once.
struct SampleKey {
  int64_t pid, tid;
  StackId stack;
  FlamePhase phase;
  auto operator<=>(const SampleKey&) const = default;
  bool operator==(const SampleKey&) const = default;
};

struct SampleKeyHash {
  size_t operator()(const SampleKey& k) const {
    const uint64_t stack_phase = uint64_t{k.stack} << 8 | static_cast<uint64_t>(k.phase);
    return std::hash<int64_t>{}(k.pid * 31 + k.tid) ^ std::hash<uint64_t>{}(stack_phase);
  }
};

// The counts in key order, the order the trees' nodes are made in.
std::vector<std::pair<SampleKey, int64_t>> sample_counts(const Run& run, ProcessPhases& phases,
                                                         const FlameTreeOptions& options) {
  std::unordered_map<SampleKey, int64_t, SampleKeyHash> counts;
  for (const Sample& s : run.samples) {
    if (!sample_in_profile(s, {.include_idle = options.include_idle})) continue;
    ++counts[SampleKey{s.pid, s.tid, s.stack, phases.at(s.pid, s.ts_ns)}];
  }
  std::vector<std::pair<SampleKey, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return sorted;
}

std::map<int64_t, ProcessTreeBuilder> trees_from_samples(const Run& run, const Profile& profile,
                                                         const FlameTreeOptions& options, bool& has_phases) {
  ProcessPhases phases(run);
  has_phases = !phases.empty();
  int64_t period = run.sample_period_ns().value_or(0);
  std::map<int64_t, ProcessTreeBuilder> builders;
  for (const auto& [key, count] : sample_counts(run, phases, options)) {
    auto& builder = builders.try_emplace(key.pid, key.pid).first->second;
    builder.add(key.tid, profile.stacks().frames(key.stack), key.phase, count * period);
  }
  return builders;
}

std::map<int64_t, ProcessTreeBuilder> trees_from_profile(const Profile& profile) {
  std::map<int64_t, ProcessTreeBuilder> builders;
  for (const ThreadProfile& thread : profile.threads) {
    auto& builder = builders.try_emplace(thread.pid, thread.pid).first->second;
    for (const StackWeight& w : thread.stacks) {
      builder.add(thread.tid, profile.stacks().frames(w.stack), FlamePhase::kOutside, w.weight_ns);
    }
  }
  return builders;
}

}  // namespace

const char* flame_phase_name(FlamePhase phase) {
  switch (phase) {
    case FlamePhase::kDataWait: return "data_wait";
    case FlamePhase::kForward: return "forward";
    case FlamePhase::kBackward: return "backward";
    case FlamePhase::kOptimizer: return "optimizer";
    case FlamePhase::kOther: return "other";
    case FlamePhase::kOutside: break;
  }
  return "outside";
}

int64_t FlameProcess::total_ns() const {
  int64_t total = 0;
  if (!nodes.empty()) {
    for (int64_t ns : nodes[0].total_ns) total += ns;
  }
  return total;
}

FlameTree build_flame_tree(const Run& run, const Profile& profile, const FlameTreeOptions& options) {
  FlameTree tree;
  std::map<int64_t, ProcessTreeBuilder> builders;
  if (profile.source == ProfileSource::kSamples) {
    builders = trees_from_samples(run, profile, options, tree.has_phases);
  } else {
    builders = trees_from_profile(profile);
  }
  for (auto& [pid, builder] : builders) tree.processes.push_back(std::move(builder).finish(options.min_fraction));
  return tree;
}

}  // namespace stepscope
