#include "analyses/span_index.hpp"

#include <algorithm>
#include <unordered_map>

#include "analyses/nearly_sorted.hpp"
#include "analyses/profile.hpp"

namespace stepscope {

namespace {

struct ThreadKey {
  int64_t pid;
  int64_t tid;
  bool operator==(const ThreadKey&) const = default;
  auto operator<=>(const ThreadKey&) const = default;
};
struct ThreadKeyHash {
  size_t operator()(const ThreadKey& k) const {
    return std::hash<int64_t>()(k.pid) * 31 + std::hash<int64_t>()(k.tid);
  }
};

// A span's sort key held by value: sorting these is cache-friendly where a
// comparator reading run.spans[id] misses on every comparison.
struct Entry {
  int64_t start_ns;
  int64_t end_ns;
  SpanId span;
};

bool nesting_order(const Entry& a, const Entry& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
  return a.span < b.span;  // trace order, as a stable sort keeps it
}

// Dense thread numbers in first-seen order, for host spans (is_host_span).
// Consecutive spans are mostly on one thread: the last lookup is remembered.
class ThreadNumbers {
 public:
  // The thread number of a host span.
  uint32_t number(const Span& span) {
    ThreadKey key{span.pid, span.tid};
    if (last_number_ == UINT32_MAX || !(key == last_)) {
      auto [found, inserted] = seen_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
      if (inserted) keys_.push_back(key);
      last_ = key;
      last_number_ = found->second;
    }
    return last_number_;
  }
  const std::vector<ThreadKey>& keys() const { return keys_; }

 private:
  std::vector<ThreadKey> keys_;  // by number
  std::unordered_map<ThreadKey, uint32_t, ThreadKeyHash> seen_;
  ThreadKey last_{};
  uint32_t last_number_ = UINT32_MAX;
};

}  // namespace

HostSpansByThread::HostSpansByThread(const Run& run) {
  // Counted in a first pass, placed in a second (a counting sort by thread):
  // no number per span kept in between, so no more memory than the entries.
  ThreadNumbers numbers;
  std::vector<size_t> count;
  for (const Span& span : run.spans) {
    if (!is_host_span(span.kind)) continue;
    uint32_t n = numbers.number(span);
    if (n == count.size()) count.push_back(0);
    count[n]++;
  }
  const std::vector<ThreadKey>& keys = numbers.keys();
  // Rank of each thread in (pid, tid) order.
  std::vector<uint32_t> by_key(keys.size());
  for (uint32_t i = 0; i < by_key.size(); ++i) by_key[i] = i;
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<size_t> begin(keys.size() + 1, 0);  // of each thread by rank
  for (size_t r = 0; r < keys.size(); ++r) begin[r + 1] = begin[r] + count[by_key[r]];
  std::vector<size_t> next(keys.size());  // by number
  for (size_t r = 0; r < keys.size(); ++r) next[by_key[r]] = begin[r];
  std::vector<Entry> entries(begin.back());
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    if (!is_host_span(span.kind)) continue;
    entries[next[numbers.number(span)]++] = {span.start_ns, span.end_ns, i};
  }
  // A thread's spans come in trace order, which is mostly time order.
  for (size_t r = 0; r < keys.size(); ++r) {
    sort_nearly_sorted(std::span<Entry>(entries).subspan(begin[r], begin[r + 1] - begin[r]),
                       [](const Entry& a, const Entry& b) { return nesting_order(a, b); });
  }
  // Only now: the sorts' buffers are gone, which keeps the peak lower.
  order_.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) order_[i] = entries[i].span;
  threads_.reserve(keys.size());
  for (size_t r = 0; r < keys.size(); ++r) {
    const ThreadKey& key = keys[by_key[r]];
    threads_.push_back({key.pid, key.tid, std::span<const SpanId>(order_).subspan(begin[r], begin[r + 1] - begin[r])});
  }
}

}  // namespace stepscope
