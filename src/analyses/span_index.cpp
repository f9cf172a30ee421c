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

// Dense thread numbers in first-seen order, per host span (UINT32_MAX for
// device activity). Consecutive spans are mostly on one thread: the last
// lookup is remembered.
std::vector<uint32_t> thread_numbers(const Run& run, std::vector<ThreadKey>& keys) {
  std::vector<uint32_t> number(run.spans.size(), UINT32_MAX);
  std::unordered_map<ThreadKey, uint32_t, ThreadKeyHash> seen;
  ThreadKey last{};
  uint32_t last_number = UINT32_MAX;
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    const Span& span = run.spans[i];
    if (!is_host_span(span.kind)) continue;
    ThreadKey key{span.pid, span.tid};
    if (last_number == UINT32_MAX || !(key == last)) {
      auto [found, inserted] = seen.try_emplace(key, static_cast<uint32_t>(keys.size()));
      if (inserted) keys.push_back(key);
      last = key;
      last_number = found->second;
    }
    number[i] = last_number;
  }
  return number;
}

}  // namespace

HostSpansByThread::HostSpansByThread(const Run& run) {
  std::vector<ThreadKey> keys;
  std::vector<uint32_t> number = thread_numbers(run, keys);
  // Rank of each thread in (pid, tid) order.
  std::vector<uint32_t> by_key(keys.size());
  for (uint32_t i = 0; i < by_key.size(); ++i) by_key[i] = i;
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<uint32_t> rank(keys.size());
  for (uint32_t r = 0; r < by_key.size(); ++r) rank[by_key[r]] = r;
  // Counting sort by thread rank, then each thread's spans by nesting order.
  std::vector<size_t> begin(keys.size() + 1, 0);
  for (uint32_t n : number) {
    if (n != UINT32_MAX) begin[rank[n] + 1]++;
  }
  for (size_t r = 0; r < keys.size(); ++r) begin[r + 1] += begin[r];
  std::vector<Entry> entries(begin.back());
  std::vector<size_t> next(begin.begin(), begin.end() - 1);
  for (SpanId i = 0; i < run.spans.size(); ++i) {
    if (number[i] == UINT32_MAX) continue;
    const Span& span = run.spans[i];
    entries[next[rank[number[i]]]++] = {span.start_ns, span.end_ns, i};
  }
  order_.resize(entries.size());
  // A thread's spans come in trace order, which is mostly time order.
  for (size_t r = 0; r < keys.size(); ++r) {
    sort_nearly_sorted(std::span<Entry>(entries).subspan(begin[r], begin[r + 1] - begin[r]),
                       [](const Entry& a, const Entry& b) { return nesting_order(a, b); });
  }
  for (size_t i = 0; i < entries.size(); ++i) order_[i] = entries[i].span;
  threads_.reserve(keys.size());
  for (size_t r = 0; r < keys.size(); ++r) {
    const ThreadKey& key = keys[by_key[r]];
    threads_.push_back({key.pid, key.tid, std::span<const SpanId>(order_).subspan(begin[r], begin[r + 1] - begin[r])});
  }
}

}  // namespace stepscope
