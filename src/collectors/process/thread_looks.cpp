#include "collectors/process/thread_looks.hpp"

#include <utility>

namespace stepscope {

void ThreadLooks::begin_round() {
  std::swap(looks_, last_looks_);
  looks_.clear();
  cursor_ = last_cursor_ = 0;
}

bool ThreadLooks::may_have_run(int64_t native_tid) {
  const Entry* last = find(last_looks_, last_cursor_, native_tid);
  // Running at the last look: it may well still be, and then it is never
  // still. Looked at after the read, as before, not to delay the read.
  if (last == nullptr || !last->look || last->look->state == 'R') return true;
  auto look = states_->look(pid_, native_tid);
  looks_.push_back({native_tid, look, true});
  return !(look && look->still && last->before_read);
}

std::optional<char> ThreadLooks::state(int64_t native_tid) {
  if (const Entry* entry = find(looks_, cursor_, native_tid); entry != nullptr && entry->before_read) {
    if (!entry->look) return std::nullopt;
    return entry->look->state;
  }
  auto look = states_->look(pid_, native_tid);
  looks_.push_back({native_tid, look, false});
  if (!look) return std::nullopt;
  return look->state;
}

const ThreadLooks::Entry* ThreadLooks::find(const std::vector<Entry>& entries, size_t& cursor, int64_t tid) {
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t at = (cursor + i) % entries.size();
    if (entries[at].tid == tid) {
      cursor = at + 1;
      return &entries[at];
    }
  }
  return nullptr;
}

}  // namespace stepscope
