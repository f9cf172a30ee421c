#include "analyses/samples_by_thread.hpp"

#include <algorithm>
#include <stdexcept>

namespace stepscope {

size_t SamplesByThread::thread_number(const Sample& s, const Wanted& wanted) {
  Cached& cached = cache_[static_cast<uint64_t>(s.tid) % cache_.size()];
  if (cached.key.pid == s.pid && cached.key.tid == s.tid) return cached.number;
  Key key{s.pid, s.tid};
  auto [found, added] = thread_of_.try_emplace(key, threads_.size());
  if (added) threads_.push_back({s.pid, s.tid, wanted(s.pid, s.tid), 0, 0});
  cached = {key, found->second};
  return found->second;
}

// A counting sort by thread: the first pass counts each wanted thread's
// samples, the second places them. A thread's samples keep the run's order,
// which is time order unless the file says otherwise.
bool SamplesByThread::kept(const Sample& s, const Wanted& wanted) {
  if (s.stack == StackTree::kRoot) return false;
  switch (threads_[thread_number(s, wanted)].wanted) {
    case WantedSamples::kAll:
      return true;
    case WantedSamples::kNotIdle:
      return s.state != ThreadState::kIdle;
    case WantedSamples::kNone:
      break;
  }
  return false;
}

SamplesByThread::SamplesByThread(const Run& run, const Wanted& wanted) : run_(run) {
  if (run.samples.size() > UINT32_MAX) throw std::length_error("more samples than an index of 32 bits numbers");
  for (const Sample& s : run.samples) {
    if (kept(s, wanted)) ++threads_[thread_number(s, wanted)].end;  // a count until the offsets below
  }
  size_t offset = 0;
  for (Thread& t : threads_) {
    t.begin = offset;
    offset += t.end;
    t.end = t.begin;
  }
  by_thread_.resize(offset);
  for (size_t i = 0; i < run.samples.size(); ++i) {
    if (kept(run.samples[i], wanted)) by_thread_[threads_[thread_number(run.samples[i], wanted)].end++] = uint32_t(i);
  }
  auto earlier = [&](uint32_t a, uint32_t b) { return run.samples[a].ts_ns < run.samples[b].ts_ns; };
  for (const Thread& t : threads_) {
    auto first = by_thread_.begin() + static_cast<std::ptrdiff_t>(t.begin);
    auto last = by_thread_.begin() + static_cast<std::ptrdiff_t>(t.end);
    if (!std::is_sorted(first, last, earlier)) std::stable_sort(first, last, earlier);
  }
}

SamplesByThread::Samples SamplesByThread::of_thread(int64_t pid, int64_t tid, int64_t from_ns, int64_t to_ns) const {
  auto found = thread_of_.find({pid, tid});
  if (found == thread_of_.end()) return {};
  const Thread& t = threads_[found->second];
  auto first = by_thread_.begin() + static_cast<std::ptrdiff_t>(t.begin);
  auto last = by_thread_.begin() + static_cast<std::ptrdiff_t>(t.end);
  auto before = [&](uint32_t index, int64_t ts) { return run_.samples[index].ts_ns < ts; };
  auto from = std::lower_bound(first, last, from_ns, before);
  return {from, std::lower_bound(from, last, to_ns, before)};
}

std::vector<int64_t> SamplesByThread::threads_of(int64_t pid) const {
  std::vector<int64_t> out;
  for (const Thread& t : threads_) {
    if (t.pid == pid && t.wanted != WantedSamples::kNone) out.push_back(t.tid);
  }
  return out;
}

}  // namespace stepscope
