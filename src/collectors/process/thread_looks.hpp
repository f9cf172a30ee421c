// The scheduler states of one process's threads, read around its stacks.
//
// The stack reader asks, before it reads, whether each thread the last round
// sampled may have run since (python::ThreadActivity). A thread that was
// asleep at its last look is looked at now, and that look serves its sample;
// if the look before last round's read found it asleep too, and it has not
// been scheduled in or out since, it has run no instruction since before that
// read: its stack is the one that read found. A thread running at its last
// look, or new, is looked at after the read, as the sampler always did: a
// running thread is never still, and looking first would only delay the read
// of its stack. A look after a read does not vouch for that read (the thread
// may have run between the two), so a thread that just stopped running is
// read once more before its stack can be kept.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "collectors/process/thread_state_reader.hpp"
#include "collectors/python/stack_reader.hpp"

namespace stepscope {

class ThreadLooks final : public python::ThreadActivity {
 public:
  ThreadLooks(ThreadStateReader& states, pid_t pid) : states_(&states), pid_(pid) {}

  // This round's looks become the last round's; call before each read.
  void begin_round();

  // Looks at the thread now (before the stacks are read) unless it was
  // running at its last look.
  bool may_have_run(int64_t native_tid) override;

  // The thread's state this round: the look taken before the read, else a
  // look now; nullopt when it is gone.
  std::optional<char> state(int64_t native_tid);

 private:
  struct Entry {
    int64_t tid = 0;
    std::optional<ThreadStateReader::Look> look;
    bool before_read = false;  // taken before the round's stacks were read
  };
  // Searched from where the last search ended: the reader asks, and the
  // sampler reads, in the same thread order round after round.
  static const Entry* find(const std::vector<Entry>& entries, size_t& cursor, int64_t tid);

  ThreadStateReader* states_;
  pid_t pid_;
  std::vector<Entry> looks_, last_looks_;
  size_t cursor_ = 0, last_cursor_ = 0;
};

}  // namespace stepscope
