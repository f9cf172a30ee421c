// Independent analyses run side by side on a few threads of their own: no
// global pool and no state beyond one call. The analyses are pure functions
// of a const Run, so the only sharing is the read-only Run and the results
// that later tasks wait for.
//
// Tasks start in the order they were added, each on the next free thread
// (the caller's among them). A task may wait for a task added before it:
// that one has started by then, on some thread that will finish it, so
// waiting cannot deadlock. Order tasks so that the long ones start first.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <vector>

namespace stepscope {

// The threads to use for work that scales with cores: the machine's, at least one.
size_t analysis_threads();

class SideBySide {
 public:
  using Task = size_t;

  // Adds work; returns its number, for wait_for. Not while run() runs.
  Task add(std::function<void()> work);

  // From inside a later task: returns once `task` has finished. Rethrows its
  // exception if it failed (the later task cannot go on without its result).
  void wait_for(Task task) const;

  // Runs every task, once per SideBySide, on at most `threads` threads (the
  // caller's included) and returns when all have finished. When tasks threw, rethrows the exception
  // of the first of them in the order added: the error a one-thread run
  // would have reported.
  void run(size_t threads);

 private:
  void run_tasks();

  std::vector<std::function<void()>> work_;
  std::deque<std::atomic<bool>> done_;  // a deque: atomics cannot move
  std::vector<std::exception_ptr> errors_;
  std::atomic<size_t> next_{0};
};

}  // namespace stepscope
