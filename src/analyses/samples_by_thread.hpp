// A Run's samples grouped by thread, each thread's in time order, for the
// threads a filter wants (all their samples, or only those on a CPU or
// waiting for a disk: not idle). The analyses that look at one rank (its step
// thread, its DataLoader workers) read that rank's samples through it instead
// of passing over every sample of a run of many ranks once per rank.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

enum class WantedSamples : uint8_t { kNone, kAll, kNotIdle };

class SamplesByThread {
 public:
  // Indexes into run.samples: 4 bytes a sample.
  using Samples = std::span<const uint32_t>;

  using Wanted = std::function<WantedSamples(int64_t pid, int64_t tid)>;

  // Two passes over the samples; `wanted` is asked once per thread. Samples
  // without a stack (kRoot) are left out: there is nothing in them to read.
  SamplesByThread(const Run& run, const Wanted& wanted);

  // The samples of thread (pid, tid) with from_ns <= ts < to_ns, by time;
  // empty for a thread not wanted.
  Samples of_thread(int64_t pid, int64_t tid, int64_t from_ns = INT64_MIN, int64_t to_ns = INT64_MAX) const;
  // The wanted threads of process `pid` that have samples.
  std::vector<int64_t> threads_of(int64_t pid) const;
  const Sample& sample(uint32_t index) const { return run_.samples[index]; }

 private:
  struct Thread {
    int64_t pid = 0;
    int64_t tid = 0;
    WantedSamples wanted = WantedSamples::kNone;
    size_t begin = 0, end = 0;  // into by_thread_
  };
  struct Key {
    int64_t pid;
    int64_t tid;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<int64_t>()(k.pid) * 31 + std::hash<int64_t>()(k.tid); }
  };
  struct Cached {
    Key key{-1, -1};
    size_t number = 0;
  };

  // The number of a sample's thread, added (and asked about) when new. A
  // round's samples go through the same threads in turn: a small cache by tid
  // answers most without hashing.
  size_t thread_number(const Sample& s, const Wanted& wanted);
  bool kept(const Sample& s, const Wanted& wanted);

  const Run& run_;
  std::vector<uint32_t> by_thread_;  // each wanted thread's samples together, by time
  std::vector<Thread> threads_;      // in order of first sample
  std::unordered_map<Key, size_t, KeyHash> thread_of_;
  std::array<Cached, 64> cache_{};
};

}  // namespace stepscope
