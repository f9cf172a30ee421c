// The scheduler states of one process's threads, read before its stacks.
//
// The stack reader asks, before it reads, whether each thread the last round
// sampled may have run since (python::ThreadActivity). Each answer reads the
// thread's state, which the thread's sample then uses, so a thread's state is
// still read once a round. A thread that was looked at before last round's
// read too, and has not been scheduled in or out since that look, has run no
// instruction since before that read: its stack is the one that read found.
// A thread looked at only after its stack was read (one that round found new)
// may have run between the two, so it is read again.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "collectors/python_stack_reader.hpp"
#include "collectors/thread_state_reader.hpp"

namespace stepscope {

class ThreadLooks final : public python::ThreadActivity {
 public:
  ThreadLooks(ThreadStateReader& states, pid_t pid) : states_(&states), pid_(pid) {}

  // This round's looks become the last round's; call before each read.
  void begin_round();

  // Looks at the thread now (before the stacks are read).
  bool may_have_run(int64_t native_tid) override;

  // The thread's state this round: the look taken before the read, else a
  // look now (a thread the read found new); nullopt when it is gone.
  std::optional<char> state(int64_t native_tid);

 private:
  struct Entry {
    int64_t tid = 0;
    std::optional<ThreadStateReader::Look> look;
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
